/* Quickstart host program: open a runtime by name (the worker finds its
 * module beside the libsimpler.so this program links), register the
 * callable, run z = 2*x + y on the sim chip and check it.
 * usage: quickstart CALLABLE.spc [RUNTIME]   (RUNTIME: hbg (default) or tmr) */
#include <stdio.h>
#include <stdlib.h>

#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/worker.h"

enum { N = 4096, TILE = 512 };

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s CALLABLE.spc [RUNTIME]   (RUNTIME: hbg or tmr)\n", argv[0]);
        return 2;
    }
    const char *runtime = argc == 3 ? argv[2] : "hbg";
    static float x[N], y[N], z[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }

    char err[512];
    sp_worker *w;
    int rc = sp_worker_open_runtime(runtime, NULL, NULL, &w, err, sizeof err);
    if (rc) {
        fprintf(stderr, "open: %s: %s\n", sp_status_name(rc), err);
        return 1;
    }
    rc = sp_worker_register_callable_file(w, 0, argv[1]);
    if (rc) {
        fprintf(stderr, "register: %s: %s\n", sp_status_name(rc), sp_worker_last_error(w));
        sp_worker_close(w);
        return 1;
    }

    /* Run arguments: host tensors (addr = host pointer), tensors first. */
    static sp_args args;
    int64_t shape[1] = {N};
    float *data[3] = {x, y, z};
    uint8_t dirs[3] = {SP_IN, SP_IN, SP_OUT};
    for (int i = 0; i < 3; i++) {
        sp_tensor_init(&args.tensors[i], (uint64_t)(uintptr_t)data[i], SP_DTYPE_F32, 1, shape);
        args.dirs[i] = dirs[i];
    }
    args.tensor_count = 3;
    args.scalars[0] = TILE;
    args.scalar_count = 1;

    sp_run_stats st;
    rc = sp_worker_run(w, 0, &args, NULL, &st);
    if (rc) {
        fprintf(stderr, "run: %s: %s\n", sp_status_name(rc), sp_worker_last_error(w));
        sp_worker_close(w);
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += z[i] != 2.0f * (float)i + 1.0f;
    printf("quickstart: %llu tasks, %llu edges, z = 2*x + y: %s\n", (unsigned long long)st.tasks,
           (unsigned long long)st.edges, bad ? "WRONG" : "PASS");
    sp_worker_close(w);
    return bad ? 1 : 0;
}
