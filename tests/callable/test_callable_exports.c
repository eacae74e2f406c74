/* sp__elf_find_export (issue 14's pack-time check) on untrusted bytes: a
 * real object's entries are found through its GNU hash table, what it does
 * not define is SP_EMODULE_SYMBOL, and every truncation and ~6000 seeded
 * byte edits of it give a named status, never a crash or a read outside
 * the bytes (each is an exact-size heap copy, so ASan catches one). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "callable_test_support.h"
#include "common/elf_check.h"

static int find_in_copy(const uint8_t *bytes, size_t size, const char *name)
{
    uint8_t *copy = malloc(size ? size : 1);
    cr_assert_not_null(copy);
    memcpy(copy, bytes, size);
    char why[256];
    int rc = sp__elf_find_export(copy, size, name, why, sizeof why);
    free(copy);
    cr_assert(rc == SP_OK || rc == SP_EMODULE_SYMBOL || rc == SP_EKERNEL_LOAD,
              "%s in %zu bytes: status %d", name, size, rc);
    if (rc)
        cr_assert_gt(strlen(why), 0, "a refusal names its reason");
    return rc;
}

Test(exports, real_objects_export_their_entries_only)
{
    size_t size;
    uint8_t *so = read_whole(KERNELS_SO, &size);
    cr_assert_eq(find_in_copy(so, size, "callable_fill"), SP_OK);
    cr_assert_eq(find_in_copy(so, size, "callable_copy"), SP_OK);
    cr_assert_eq(find_in_copy(so, size, "callable_fil"), SP_EMODULE_SYMBOL);
    cr_assert_eq(find_in_copy(so, size, "callable_fill_"), SP_EMODULE_SYMBOL);
    cr_assert_eq(find_in_copy(so, size, "memcpy"), SP_EMODULE_SYMBOL);
    char why[256];
    cr_assert_eq(sp__elf_find_export(so, size, "", why, sizeof why), SP_EKERNEL_LOAD);
    cr_assert_eq(sp__elf_find_export(so, size, NULL, why, sizeof why), SP_EKERNEL_LOAD);
    free(so);
}

Test(exports, damaged_objects_never_crash, .timeout = 240)
{
    size_t size;
    uint8_t *so = read_whole(KERNELS_SO, &size);
    for (size_t len = 0; len < size; len += len < 1024 ? 1 : 61)
        find_in_copy(so, len, "callable_fill");
    uint8_t *work = malloc(size);
    uint64_t rng = 0x6e75686173680001ull;
    int refused = 0;
    for (int i = 0; i < 6000; i++) {
        memcpy(work, so, size);
        for (int r = 0; r < 1 + i % 3; r++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            /* Mostly the headers and tables in the first pages. */
            size_t at = (size_t)(rng >> 33) % (i % 4 ? (size < 8192 ? size : 8192) : size);
            work[at] = (uint8_t)(rng >> 17);
        }
        refused += find_in_copy(work, size, i % 2 ? "callable_fill" : "callable_copy") != SP_OK;
    }
    cr_log_info("%d of 6000 edited objects refused", refused);
    cr_assert_gt(refused, 0, "the edits reach the checks");
    free(work);
    free(so);
}
