/* A runtime module whose contract breaks one rule, chosen by the environment
 * variable SP_TEST_BAD_CONTRACT (each Criterion test runs in its own
 * process): depth0, depth3, count9, kind, class, reserved,
 * resource_reserved, heap_class. Unset, the contract is valid, so the tests
 * can show the refusal comes from the broken field alone. */
#include <stdlib.h>
#include <string.h>

#include "module_stubs.h"

static const sp_pipeline_contract good = SP_TEST_GOOD_CONTRACT;

SP_EXPORT const sp_pipeline_contract *simpler_get_pipeline_contract(void)
{
    static sp_pipeline_contract c;
    c = good;
    const char *what = getenv("SP_TEST_BAD_CONTRACT");
    if (!what)
        return &c;
    if (strcmp(what, "depth0") == 0)
        c.pipeline_depth = 0;
    else if (strcmp(what, "depth3") == 0)
        c.pipeline_depth = 3;
    else if (strcmp(what, "count9") == 0)
        c.resource_count = 9;
    else if (strcmp(what, "kind") == 0)
        c.resources[3].kind = 77;
    else if (strcmp(what, "class") == 0)
        c.resources[3].resource_class = 9;
    else if (strcmp(what, "reserved") == 0)
        c.reserved = 1;
    else if (strcmp(what, "resource_reserved") == 0)
        c.resources[1].reserved = 0xdead;
    else if (strcmp(what, "heap_class") == 0)
        c.resources[0].resource_class = SP_CLASS_HOST_PER_RUN;
    return &c;
}
