/* Paths relative to the running executable, from /proc/self/exe. */
#include "common/paths.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sp__path_beside_exe(char *buf, size_t len, const char *rel)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    int w = snprintf(buf, len, "%s/%s", exe, rel);
    return w > 0 && (size_t)w < len ? 0 : -1;
}
