/* Pack a callable from a spec and register it: what most scene and worker
 * tests do before their first run. Header-only. */
#ifndef SP_TEST_REGISTER_SPEC_H
#define SP_TEST_REGISTER_SPEC_H

#include <stdio.h>
#include <stdlib.h>

#include "simpler/callable.h"
#include "simpler/status.h"
#include "simpler/worker.h"

/* Build `spec` and register it on `w` as callable `id`. 0 or a status, the
 * reason in err (the builder's, or the worker's last error). */
static inline int sp_test_register_spec(sp_worker *w, uint32_t id, const sp_callable_spec *spec,
                                        char *err, size_t err_len)
{
    void *blob;
    size_t size;
    int rc = sp_callable_build(spec, &blob, &size, err, err_len);
    if (rc)
        return rc;
    rc = sp_worker_register_callable(w, id, blob, size);
    if (rc)
        snprintf(err, err_len, "%s", sp_worker_last_error(w));
    free(blob);
    return rc;
}

#endif
