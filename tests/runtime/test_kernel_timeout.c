/* The per-task kernel timeout a run gets (sp_kernel_timeout_ns): the
 * config's timeout_us, else SIMPLER_KERNEL_TIMEOUT_MS, else 30 s. A value
 * of the environment that is not a plain number of ms in range — "-1",
 * which strtoull reads as 2^64 - 1 and whose product wrapped to a deadline
 * already passed, "0", garbage, a sign, an overflow — is ignored with a
 * warning, never wrapped; a huge config value is clamped, so start +
 * timeout cannot overflow either. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "runtime/host/fault_report.h"

static const uint64_t ms = 1000000ull;

Test(kernel_timeout, the_environment_is_range_checked)
{
    static const char *const refused[] = {
        "-1",
        "0",
        "-0",
        "+5",
        " 5",
        "5 ",
        "5ms",
        "abc",
        "",
        "99999999999999999999",
        "18446744073709551615",
        "604800001", /* a week + 1 ms */
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        cr_assert_eq(setenv("SIMPLER_KERNEL_TIMEOUT_MS", refused[i], 1), 0);
        uint64_t t = sp_kernel_timeout_ns(0);
        cr_assert_eq(t, SP_DEFAULT_KERNEL_TIMEOUT_NS,
                     "SIMPLER_KERNEL_TIMEOUT_MS='%s' gave %llu ns, not the default", refused[i],
                     (unsigned long long)t);
    }
    cr_assert_eq(setenv("SIMPLER_KERNEL_TIMEOUT_MS", "20", 1), 0);
    cr_assert_eq(sp_kernel_timeout_ns(0), 20 * ms);
    cr_assert_eq(setenv("SIMPLER_KERNEL_TIMEOUT_MS", "604800000", 1), 0);
    cr_assert_eq(sp_kernel_timeout_ns(0), SP_MAX_KERNEL_TIMEOUT_NS);
    cr_assert_eq(sp_kernel_timeout_ns(1500), 1500000ull, "the config wins over the environment");
    unsetenv("SIMPLER_KERNEL_TIMEOUT_MS");
    cr_assert_eq(sp_kernel_timeout_ns(0), SP_DEFAULT_KERNEL_TIMEOUT_NS);
}

Test(kernel_timeout, a_huge_config_value_is_clamped_not_wrapped)
{
    unsetenv("SIMPLER_KERNEL_TIMEOUT_MS");
    cr_assert_eq(sp_kernel_timeout_ns(UINT64_MAX), SP_MAX_KERNEL_TIMEOUT_NS);
    cr_assert_eq(sp_kernel_timeout_ns(UINT64_MAX / 1000 + 1), SP_MAX_KERNEL_TIMEOUT_NS);
    /* A start time of a century from now plus the timeout still fits. */
    uint64_t century = 100ull * 365 * 24 * 3600 * 1000000000ull;
    cr_assert_gt(century + sp_kernel_timeout_ns(UINT64_MAX), century);
}
