/* A Criterion-compatible shim for ThreadSanitizer builds only: Criterion
 * cannot start under TSan ("Could not initialize inheritable arena"), so a
 * TSan build compiles the same tests against this header and links
 * tests/support/crshim/crshim.c (the runner) instead of libcriterion.
 *
 * It implements the subset of Criterion 2.4 the tests use: Test, TestSuite
 * (.init, .fini, .timeout, .signal, .exit_code, .disabled, .description),
 * the old-style cr_assert_* / cr_expect_* forms, cr_log_* and cr_malloc /
 * cr_free; parameterized tests are in criterion/parameterized.h. As in
 * Criterion, every test runs in its own forked process: suite init, test
 * init, the test, test fini, suite fini. A failed cr_assert ends the test
 * (the finis still run); a failed cr_expect is recorded and the test goes on. */
#ifndef SP_CRSHIM_CRITERION_H
#define SP_CRSHIM_CRITERION_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* "" __VA_ARGS__ makes the message optional and still format-checked; an
 * assertion without a message passes an empty format string. */
#pragma GCC diagnostic ignored "-Wformat-zero-length"

/* What Test(...) and TestSuite(...) accept after the names. */
struct crs_test_data {
    void (*init)(void);
    void (*fini)(void);
    double timeout; /* seconds; 0: the suite's, else none */
    int signal;     /* the test passes if it dies of this signal */
    int exit_code;  /* the test passes if it exits with this status */
    bool disabled;
    const char *description;
};

struct criterion_test_params {
    size_t size;
    void *params;
    size_t length;
    void (*cleanup)(struct criterion_test_params *);
};

struct crs_test {
    const char *suite;
    const char *name;
    const char *file;
    int line;
    void (*fn)(void);                             /* void (*)(Type *) for a parameterized test */
    struct criterion_test_params (*params)(void); /* NULL: not parameterized */
    struct crs_test_data data;
    struct crs_test *next;
};

struct crs_suite {
    const char *name;
    struct crs_test_data data;
    struct crs_suite *next;
};

void crs_register_test(struct crs_test *t);
void crs_register_suite(struct crs_suite *s);
/* A failed cr_assert ends the test (noreturn, as in Criterion, so the
 * compiler knows the code after it sees the condition hold); a failed
 * cr_expect is counted and returns. */
void crs_fail_assert(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));
void crs_fail_expect(const char *file, int line, const char *expr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void crs_log(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *cr_malloc(size_t size);
void cr_free(void *ptr);

#define CRS_ID_(kind, suite, name) crs_##kind##_##suite##_##name

#define Test(Suite, Name, ...)                                                                     \
    static void CRS_ID_(fn, Suite, Name)(void);                                                    \
    static struct crs_test CRS_ID_(test, Suite, Name) = {                                          \
        .suite = #Suite,                                                                           \
        .name = #Name,                                                                             \
        .file = __FILE__,                                                                          \
        .line = __LINE__,                                                                          \
        .fn = CRS_ID_(fn, Suite, Name),                                                            \
        .data = {__VA_ARGS__},                                                                     \
    };                                                                                             \
    __attribute__((constructor)) static void CRS_ID_(reg, Suite, Name)(void)                       \
    {                                                                                              \
        crs_register_test(&CRS_ID_(test, Suite, Name));                                            \
    }                                                                                              \
    static void CRS_ID_(fn, Suite, Name)(void)

#define TestSuite(Suite, ...)                                                                      \
    static struct crs_suite crs_suite_##Suite = {.name = #Suite, .data = {__VA_ARGS__}};           \
    __attribute__((constructor)) static void crs_suite_reg_##Suite(void)                           \
    {                                                                                              \
        crs_register_suite(&crs_suite_##Suite);                                                    \
    }

#define CRS_CHECK_(Kind, Cond, Expr, ...)                                                          \
    do {                                                                                           \
        if (!(Cond))                                                                               \
            crs_fail_##Kind(__FILE__, __LINE__, Expr, "" __VA_ARGS__);                             \
    } while (0)
#define CRS_OP_(Kind, Op, A, B, ...) CRS_CHECK_(Kind, (A)Op(B), #A " " #Op " " #B, __VA_ARGS__)
#define CRS_STR_(Kind, Op, A, B, ...)                                                              \
    CRS_CHECK_(Kind, strcmp((A), (B)) Op 0, "strcmp(" #A ", " #B ") " #Op " 0", __VA_ARGS__)
#define CRS_ARR_(Kind, Op, A, B, Size, ...)                                                        \
    CRS_CHECK_(Kind, memcmp((A), (B), (Size)) Op 0, "memcmp(" #A ", " #B ", " #Size ") " #Op " 0", \
               __VA_ARGS__)
#define CRS_FLOAT_(Kind, Op, A, B, Eps, ...)                                                       \
    CRS_CHECK_(Kind, ((A) - (B) <= (Eps) && (B) - (A) <= (Eps)) Op 1,                              \
               "|" #A " - " #B "| <= " #Eps " " #Op " true", __VA_ARGS__)

#define cr_assert(Cond, ...) CRS_CHECK_(assert, (Cond), #Cond, __VA_ARGS__)
#define cr_expect(Cond, ...) CRS_CHECK_(expect, (Cond), #Cond, __VA_ARGS__)
#define cr_assert_not(Cond, ...) CRS_CHECK_(assert, !(Cond), "!(" #Cond ")", __VA_ARGS__)
#define cr_expect_not(Cond, ...) CRS_CHECK_(expect, !(Cond), "!(" #Cond ")", __VA_ARGS__)
#define cr_assert_fail(...) crs_fail_assert(__FILE__, __LINE__, "cr_assert_fail", "" __VA_ARGS__)
#define cr_expect_fail(...) crs_fail_expect(__FILE__, __LINE__, "cr_expect_fail", "" __VA_ARGS__)

#define cr_assert_eq(A, B, ...) CRS_OP_(assert, ==, A, B, __VA_ARGS__)
#define cr_expect_eq(A, B, ...) CRS_OP_(expect, ==, A, B, __VA_ARGS__)
#define cr_assert_neq(A, B, ...) CRS_OP_(assert, !=, A, B, __VA_ARGS__)
#define cr_expect_neq(A, B, ...) CRS_OP_(expect, !=, A, B, __VA_ARGS__)
#define cr_assert_lt(A, B, ...) CRS_OP_(assert, <, A, B, __VA_ARGS__)
#define cr_expect_lt(A, B, ...) CRS_OP_(expect, <, A, B, __VA_ARGS__)
#define cr_assert_leq(A, B, ...) CRS_OP_(assert, <=, A, B, __VA_ARGS__)
#define cr_expect_leq(A, B, ...) CRS_OP_(expect, <=, A, B, __VA_ARGS__)
#define cr_assert_gt(A, B, ...) CRS_OP_(assert, >, A, B, __VA_ARGS__)
#define cr_expect_gt(A, B, ...) CRS_OP_(expect, >, A, B, __VA_ARGS__)
#define cr_assert_geq(A, B, ...) CRS_OP_(assert, >=, A, B, __VA_ARGS__)
#define cr_expect_geq(A, B, ...) CRS_OP_(expect, >=, A, B, __VA_ARGS__)
#define cr_assert_null(A, ...) CRS_OP_(assert, ==, A, NULL, __VA_ARGS__)
#define cr_expect_null(A, ...) CRS_OP_(expect, ==, A, NULL, __VA_ARGS__)
#define cr_assert_not_null(A, ...) CRS_OP_(assert, !=, A, NULL, __VA_ARGS__)
#define cr_expect_not_null(A, ...) CRS_OP_(expect, !=, A, NULL, __VA_ARGS__)
#define cr_assert_str_eq(A, B, ...) CRS_STR_(assert, ==, A, B, __VA_ARGS__)
#define cr_expect_str_eq(A, B, ...) CRS_STR_(expect, ==, A, B, __VA_ARGS__)
#define cr_assert_str_neq(A, B, ...) CRS_STR_(assert, !=, A, B, __VA_ARGS__)
#define cr_expect_str_neq(A, B, ...) CRS_STR_(expect, !=, A, B, __VA_ARGS__)
#define cr_assert_str_empty(A, ...) CRS_CHECK_(assert, (A)[0] == '\0', #A " is empty", __VA_ARGS__)
#define cr_expect_str_empty(A, ...) CRS_CHECK_(expect, (A)[0] == '\0', #A " is empty", __VA_ARGS__)
#define cr_assert_str_not_empty(A, ...)                                                            \
    CRS_CHECK_(assert, (A)[0] != '\0', #A " is not empty", __VA_ARGS__)
#define cr_expect_str_not_empty(A, ...)                                                            \
    CRS_CHECK_(expect, (A)[0] != '\0', #A " is not empty", __VA_ARGS__)
#define cr_assert_arr_eq(A, B, Size, ...) CRS_ARR_(assert, ==, A, B, Size, __VA_ARGS__)
#define cr_expect_arr_eq(A, B, Size, ...) CRS_ARR_(expect, ==, A, B, Size, __VA_ARGS__)
#define cr_assert_arr_neq(A, B, Size, ...) CRS_ARR_(assert, !=, A, B, Size, __VA_ARGS__)
#define cr_expect_arr_neq(A, B, Size, ...) CRS_ARR_(expect, !=, A, B, Size, __VA_ARGS__)
#define cr_assert_float_eq(A, B, Eps, ...) CRS_FLOAT_(assert, ==, A, B, Eps, __VA_ARGS__)
#define cr_expect_float_eq(A, B, Eps, ...) CRS_FLOAT_(expect, ==, A, B, Eps, __VA_ARGS__)
#define cr_assert_float_neq(A, B, Eps, ...) CRS_FLOAT_(assert, !=, A, B, Eps, __VA_ARGS__)
#define cr_expect_float_neq(A, B, Eps, ...) CRS_FLOAT_(expect, !=, A, B, Eps, __VA_ARGS__)

#define cr_log_info(...) crs_log("INFO", __VA_ARGS__)
#define cr_log_warn(...) crs_log("WARN", __VA_ARGS__)
#define cr_log_error(...) crs_log("ERR ", __VA_ARGS__)

#endif
