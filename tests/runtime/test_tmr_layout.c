/* Issue 18: a tmr window slot holds only the task's fixed state; its
 * descriptors, kernel arguments, directions and holds (with their fan-out
 * edge nodes) live in an extent of the argument ring sized by the task's
 * own counts. A slot was 6.6 KB (a page per slot for every run); these
 * checks fail if the arrays move back into it or the extent stops
 * following the counts. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "runtime/tensormap_and_ringbuffer/device/tmr_layout.h"

Test(tmr_layout, a_slot_is_a_few_cache_lines)
{
    cr_assert_leq(sizeof(tmr_task), 256, "tmr_task is %zu bytes", sizeof(tmr_task));
    cr_assert_eq(sizeof(tmr_task) % 64, 0, "slots share no cache line");
}

Test(tmr_layout, an_extent_follows_the_tasks_counts)
{
    /* One tensor, two holds (a chain's task): one descriptor, one argument,
     * the direction padded to 8, two 24-byte holds, rounded to 64. */
    cr_assert_eq(tmr_extent_bytes(1, 0, 2), 192);
    cr_assert_lt(tmr_extent_bytes(4, 2, 8), tmr_extent_bytes(8, 2, 8));
    cr_assert_lt(tmr_extent_bytes(4, 2, 8), tmr_extent_bytes(4, 2, 20));
    cr_assert_eq(TMR_EXTENT_MAX % 64, 0);
    cr_assert_geq(TMR_EXTENT_MAX,
                  SP_MAX_TASK_TENSORS * sizeof(sp_tensor) + (TMR_MAX_HOLDS + 1) * sizeof(tmr_hold));
}

Test(tmr_layout, the_arrays_lie_inside_the_extent_without_overlap)
{
    static _Alignas(64) char ring[2 * 8192];
    tmr_ctl c = {.arg_base = ring, .arg_bytes = sizeof ring};
    tmr_task t = {0};
    const uint32_t tc = 5, sc = 3, holds = 7;
    tmr_extent_place(&c, &t, 1024, tc, sc);
    char *lo = ring + 1024, *hi = lo + tmr_extent_bytes(tc, sc, holds);
    cr_assert_eq((char *)t.tensors, lo);
    cr_assert_geq((char *)t.args, (char *)(t.tensors + tc));
    cr_assert_geq((char *)t.dirs, (char *)(t.args + tc + sc));
    cr_assert_geq((char *)t.holds, (char *)(t.dirs + tc));
    cr_assert_leq((char *)(t.holds + holds), hi);
    cr_assert_eq((uintptr_t)t.args % 8, 0);
    cr_assert_eq((uintptr_t)t.holds % 8, 0);
    /* An edge node names its hold, and back. */
    uint64_t n = tmr_hold_node(&c, &t.holds[3]);
    cr_assert_eq(tmr_hold_at(&c, n), &t.holds[3]);
    /* The extent ends, trimmed to the holds taken, on a 64-byte boundary. */
    t.hold_count = 2;
    uint64_t end = tmr_extent_end(&c, &t);
    cr_assert_eq(end % 64, 0);
    cr_assert_geq(ring + end, (char *)(t.holds + 2));
    cr_assert_lt(ring + end, (char *)(t.holds + 2) + 64);
}
