/* The worker's copy of each callable it registered: the module keeps its
 * own, but the worker needs the blob too (the kernel names of a run's
 * trace, sp_worker_write_trace). Copied once at register, freed at
 * unregister or close; never touched per run or per task. */
#include <stdlib.h>
#include <string.h>

#include "simpler/status.h"
#include "worker/worker_internal.h"

static wk_callable *find(const sp_worker *w, uint32_t id)
{
    for (uint32_t i = 0; i < w->callable_count; i++)
        if (w->callables[i].id == id)
            return &w->callables[i];
    return NULL;
}

const wk_callable *wk_callable_find(const sp_worker *w, uint32_t id)
{
    return find(w, id);
}

int wk_callable_keep(sp_worker *w, uint32_t id, const void *blob, size_t size)
{
    void *copy = malloc(size ? size : 1); /* malloc's alignment is at least 8 */
    sp_callable_view view;
    if (!copy)
        return SP_ENOMEM;
    memcpy(copy, blob, size);
    if (sp_callable_validate(copy, size, &view, NULL, 0) != SP_OK) {
        free(copy); /* the module accepted it, so this does not happen */
        return SP_EBLOB;
    }
    pthread_mutex_lock(&w->callables_lock);
    wk_callable *c = find(w, id);
    if (!c) {
        if (w->callable_count == w->callable_cap) {
            uint32_t cap = w->callable_cap ? 2 * w->callable_cap : 8;
            wk_callable *n = realloc(w->callables, cap * sizeof *n);
            if (!n) {
                pthread_mutex_unlock(&w->callables_lock);
                free(copy);
                return SP_ENOMEM;
            }
            w->callables = n;
            w->callable_cap = cap;
        }
        c = &w->callables[w->callable_count++];
    } else {
        free(c->blob);
    }
    *c = (wk_callable){.id = id, .blob = copy, .size = size, .view = view};
    pthread_mutex_unlock(&w->callables_lock);
    return SP_OK;
}

void wk_callable_drop(sp_worker *w, uint32_t id)
{
    pthread_mutex_lock(&w->callables_lock);
    wk_callable *c = find(w, id);
    if (c) {
        free(c->blob);
        *c = w->callables[--w->callable_count];
    }
    pthread_mutex_unlock(&w->callables_lock);
}

void wk_callables_free(sp_worker *w)
{
    for (uint32_t i = 0; i < w->callable_count; i++)
        free(w->callables[i].blob);
    free(w->callables);
    w->callables = NULL;
    w->callable_count = w->callable_cap = 0;
}
