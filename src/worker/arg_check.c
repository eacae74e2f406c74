/* The worker's check of each run's arguments against the argument
 * signature its callable declares (simpler/callable.h): parsed once at
 * registration, checked at every sp_worker_submit / sp_worker_run before
 * anything is staged, refused with SP_EARG_SIGNATURE naming the argument.
 * No allocation per run; the lookup holds submit_lock (once per run, as
 * submit already does), so an unregister never frees a signature that a
 * concurrent submit is reading. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/status.h"
#include "worker/worker_internal.h"

int wk_signature_register(sp_worker *w, uint32_t id, const char *text)
{
    if (id >= WK_MAX_CALLABLES)
        return SP_OK; /* the module refused it already; nothing to keep */
    sp_callable_signature *sig = NULL;
    if (text) {
        sig = malloc(sizeof *sig);
        if (!sig) {
            snprintf(w->last_error, sizeof w->last_error,
                     "callable %u: cannot allocate %zu bytes for its argument signature", id,
                     sizeof *sig);
            return SP_ENOMEM;
        }
        char err[256];
        int rc = sp_callable_parse_signature(text, sig, err, sizeof err);
        if (rc) { /* the validator parsed it: only a library bug gets here */
            free(sig);
            snprintf(w->last_error, sizeof w->last_error, "callable %u: argument signature: %s", id,
                     err);
            return SP_EBLOB;
        }
    }
    pthread_mutex_lock(&w->submit_lock);
    sp_callable_signature *old = w->signature[id];
    w->signature[id] = sig;
    pthread_mutex_unlock(&w->submit_lock);
    free(old);
    return SP_OK;
}

void wk_signature_drop(sp_worker *w, uint32_t id)
{
    if (id >= WK_MAX_CALLABLES)
        return;
    pthread_mutex_lock(&w->submit_lock);
    sp_callable_signature *old = w->signature[id];
    w->signature[id] = NULL;
    pthread_mutex_unlock(&w->submit_lock);
    free(old);
}

void wk_signature_free_all(sp_worker *w)
{
    for (uint32_t id = 0; id < WK_MAX_CALLABLES; id++) {
        free(w->signature[id]);
        w->signature[id] = NULL;
    }
}

int wk_signature_check(sp_worker *w, uint32_t id, const sp_args *args)
{
    /* A run without arguments is checked as an empty one. */
    static const sp_args no_args;
    if (id >= WK_MAX_CALLABLES)
        return SP_OK;
    char err[400];
    int rc = SP_OK;
    pthread_mutex_lock(&w->submit_lock);
    if (w->signature[id])
        rc = sp_callable_check_args(w->signature[id], args ? args : &no_args, err, sizeof err);
    pthread_mutex_unlock(&w->submit_lock);
    if (rc)
        snprintf(w->last_error, sizeof w->last_error, "callable %u: %s", id, err);
    return rc;
}
