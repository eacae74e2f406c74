/* Names and hints of the stable status codes, generated from one list. */
#include "simpler/status.h"

#include <stddef.h>

struct status_entry {
    int code;
    const char *name;
    const char *hint;
};

static const struct status_entry status_table[] = {
#define SP_STATUS_ROW(name, value, hint) {value, #name, hint},
    SP_STATUS_LIST(SP_STATUS_ROW)
#undef SP_STATUS_ROW
};

static const struct status_entry *status_find(int status)
{
    for (size_t i = 0; i < sizeof status_table / sizeof status_table[0]; i++)
        if (status_table[i].code == status)
            return &status_table[i];
    return NULL;
}

SP_EXPORT const char *sp_status_name(int status)
{
    const struct status_entry *e = status_find(status);
    return e ? e->name : "SP_E?";
}

SP_EXPORT const char *sp_status_hint(int status)
{
    const struct status_entry *e = status_find(status);
    return e ? e->hint : "unknown status code; this build does not know it";
}
