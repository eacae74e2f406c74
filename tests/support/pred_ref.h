/* The tests' own reading of a predicate (sp_task_predicate): element `e`
 * compared against `v` with op, as int64 — the sequential reference the
 * predicate tests check both runtimes against, written apart from the
 * runtime's evaluation (src/runtime/device/pred_task.h). */
#ifndef SP_TESTS_PRED_REF_H
#define SP_TESTS_PRED_REF_H

#include <stdbool.h>
#include <stdint.h>

#include "simpler/orchestration.h"

static inline bool pred_ref_holds(int64_t e, int op, int64_t v)
{
    switch (op) {
    case SP_PRED_EQ:
        return e == v;
    case SP_PRED_NE:
        return e != v;
    case SP_PRED_LT:
        return e < v;
    case SP_PRED_LE:
        return e <= v;
    case SP_PRED_GT:
        return e > v;
    default:
        return e >= v;
    }
}

#endif
