/* Parameterized tests for the Criterion shim (TSan builds only; see
 * criterion.h): ParameterizedTestParameters returns the parameter array,
 * which the runner builds once in its own process, and ParameterizedTest
 * runs once per element, each in its own forked process, as in Criterion. */
#ifndef SP_CRSHIM_PARAMETERIZED_H
#define SP_CRSHIM_PARAMETERIZED_H

#include "criterion/criterion.h"

#define ParameterizedTestParameters(Suite, Name)                                                   \
    static struct criterion_test_params CRS_ID_(params, Suite, Name)(void)

/* The test function takes a Type *; it is stored as void (*)(void), the
 * generic function pointer type, and called back through void (*)(void *). */
#define ParameterizedTest(Param, Suite, Name, ...)                                                 \
    static struct criterion_test_params CRS_ID_(params, Suite, Name)(void);                        \
    static void CRS_ID_(fn, Suite, Name)(Param);                                                   \
    static struct crs_test CRS_ID_(test, Suite, Name) = {                                          \
        .suite = #Suite,                                                                           \
        .name = #Name,                                                                             \
        .file = __FILE__,                                                                          \
        .line = __LINE__,                                                                          \
        .fn = (void (*)(void))CRS_ID_(fn, Suite, Name),                                            \
        .params = CRS_ID_(params, Suite, Name),                                                    \
        .data = {__VA_ARGS__},                                                                     \
    };                                                                                             \
    __attribute__((constructor)) static void CRS_ID_(reg, Suite, Name)(void)                       \
    {                                                                                              \
        crs_register_test(&CRS_ID_(test, Suite, Name));                                            \
    }                                                                                              \
    static void CRS_ID_(fn, Suite, Name)(Param)

/* cr_make_param_array(Type, Array, Len[, Cleanup]) */
#define cr_make_param_array(Type, Array, Len, ...)                                                 \
    ((struct criterion_test_params){.size = sizeof(Type), (void *)(Array), (Len), __VA_ARGS__})

#endif
