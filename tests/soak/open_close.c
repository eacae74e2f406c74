/* Opens and closes a worker N times, with one run each, on the module
 * given: what `make valgrind` runs so a leak per open/close (the crash
 * guard's alternate signal stack, kept in a dlclosed module's TLS once)
 * shows up as N blocks definitely lost. Exit status 0 when every run
 * passed. Usage: open_close MODULE.so [N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

static int one_round(const char *module, const void *blob, size_t size)
{
    char err[1024] = "";
    sp_worker *w;
    int rc = sp_worker_open(module, NULL, &w, err, sizeof err);
    if (rc) {
        fprintf(stderr, "open: %s: %s\n", sp_status_name(rc), err);
        return rc;
    }
    rc = sp_worker_register_callable(w, 0, blob, size);
    uint64_t y[4] = {0};
    if (rc == SP_OK) {
        sp_args args;
        memset(&args, 0, sizeof args);
        int64_t n = 4;
        sp_tensor_init(&args.tensors[0], (uint64_t)(uintptr_t)y, SP_DTYPE_U64, 1, &n);
        args.dirs[0] = SP_INOUT;
        args.tensor_count = 1;
        args.scalar_count = 1; /* mode 0: marks y[0] = 11, y[1] = 22 */
        rc = sp_worker_run(w, 0, &args, NULL, NULL);
        if (rc == SP_OK && (y[0] != 11 || y[1] != 22))
            rc = SP_EINVAL;
    }
    if (rc)
        fprintf(stderr, "run: %s: %s\n", sp_status_name(rc), sp_worker_last_error(w));
    sp_worker_close(w);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: open_close MODULE.so [N]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 10;
    const char *k = SP_TEST_KERNEL_DIR "/fault_kernels.so";
    sp_callable_kernel_spec ks[1] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = k, .entry = "fault_mark"}};
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/fault_orch.so",
                             .orch_entry = "fault_orch",
                             .kernels = ks,
                             .kernel_count = 1};
    void *blob;
    size_t size;
    char err[1024] = "";
    if (sp_callable_build(&spec, &blob, &size, err, sizeof err) != SP_OK) {
        fprintf(stderr, "callable: %s\n", err);
        return 1;
    }
    int failed = 0;
    for (int i = 0; i < rounds; i++)
        failed += one_round(argv[1], blob, size) != SP_OK;
    free(blob);
    printf("open_close: %d rounds, %d failed\n", rounds, failed);
    return failed ? 1 : 0;
}
