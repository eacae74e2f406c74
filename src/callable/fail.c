/* How callable functions report a failure: a reason in the caller's buffer
 * plus a status, so a bad blob never needs a log line to be diagnosed; and
 * how untrusted text is made safe to quote in that reason. */
#include <stdarg.h>
#include <stdio.h>

#include "callable/callable_internal.h"

int callable_fail(char *err, size_t err_len, int status, const char *fmt, ...)
{
    if (err && err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return status;
}

const char *callable_printable(const char *s, char *buf, size_t len)
{
    size_t n = 0;
    for (; s[n] && n < 64 && n + 1 < len; n++)
        buf[n] = s[n] >= 0x20 && s[n] < 0x7f ? s[n] : '?';
    if (len > 0)
        buf[n < len ? n : len - 1] = '\0';
    return buf;
}
