/* Field rules of a callable: what a symbol name, an argument signature and a
 * core type may be. */
#include "callable/callable_internal.h"

#include "simpler/kernel.h"
#include "simpler/types.h"

static bool ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_char(char c)
{
    return ident_start(c) || (c >= '0' && c <= '9');
}

const char *callable_name_problem(const char *name, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > SP_CALLABLE_MAX_NAME)
        return "is longer than 255 characters";
    /* dlsym takes any string, but a C identifier is what SP_KERNEL and
     * SP_ORCHESTRATION produce, and it keeps names printable in messages. */
    if (!ident_start(name[0]))
        return "does not start with a letter or '_'";
    for (size_t i = 1; i < len; i++)
        if (!ident_char(name[i]))
            return "contains a character that is not a letter, digit or '_'";
    return NULL;
}

const char *callable_signature_problem(const char *sig, size_t len, size_t *bad_index)
{
    size_t tensors = 0, scalars = 0;
    for (size_t i = 0; i < len; i++) {
        switch (sig[i]) {
        case 'i': /* IN */
        case 'o': /* OUT */
        case 'x': /* INOUT */
        case 'e': /* OUT_EXISTING */
        case 'n': /* NO_DEP */
            tensors++;
            break;
        case 's':
            scalars++;
            break;
        default:
            if (bad_index)
                *bad_index = i;
            return "has a character other than i o x e n s";
        }
    }
    /* A task carries at most this many arguments, so a longer signature
     * could never match one. */
    if (tensors > SP_MAX_TASK_TENSORS)
        return "has more than 32 tensor arguments";
    if (scalars > SP_MAX_TASK_SCALARS)
        return "has more than 16 scalar arguments";
    return NULL;
}

bool callable_core_type_valid(uint32_t core_type)
{
    return core_type == SP_CORE_AIC || core_type == SP_CORE_AIV;
}

const char *callable_core_type_name(uint32_t core_type)
{
    switch (core_type) {
    case SP_CORE_AIC:
        return "aic";
    case SP_CORE_AIV:
        return "aiv";
    default:
        return "?";
    }
}
