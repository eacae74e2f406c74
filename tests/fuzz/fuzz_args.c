/* Fuzz target for argument validation: the input bytes are untrusted
 * arguments, read field by field (missing bytes read as zero). The first
 * byte picks what they feed:
 *   0  a run's sp_args into rt_staging_stage, through a fake sp_host_api that
 *      records every call and checks it stays inside the temp buffer it gave;
 *   1  an sp_task into rt_task_validate, against a callable and device ranges
 *      built from the input, with and without memos;
 *   2  a tensor view into the helpers of simpler/tensor.h.
 * Whatever the validator accepts is re-checked here with independent 128-bit
 * arithmetic (views inside their buffers, tensors inside device ranges,
 * copies inside the staging buffer); a broken promise calls abort(). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/device/task_check.h"
#include "runtime/host/dev_callable_write.h"
#include "runtime/host/staging.h"
#include "simpler/orchestration.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_args: invariant broken at line %d: %s\n", __LINE__, #cond);      \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- reading the input -------------------------------------------------- */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static void take(reader *r, void *out, size_t len)
{
    size_t k = len < r->n ? len : r->n;
    memcpy(out, r->p, k);
    memset((uint8_t *)out + k, 0, len - k);
    r->p += k;
    r->n -= k;
}

#define READER_FN(name, type)                                                                      \
    static type name(reader *r)                                                                    \
    {                                                                                              \
        type v;                                                                                    \
        take(r, &v, sizeof v);                                                                     \
        return v;                                                                                  \
    }
READER_FN(rd_u8, uint8_t)
READER_FN(rd_u16, uint16_t)
READER_FN(rd_u32, uint32_t)
READER_FN(rd_i32, int32_t)
READER_FN(rd_u64, uint64_t)
READER_FN(rd_i64, int64_t)

/* ---- an independent model of a view ------------------------------------- */

/* A view's element count and touched byte range, in 128-bit arithmetic.
 * Returns false for a malformed view (the rules of simpler/tensor.h: known
 * dtype, 1..SP_MAX_DIMS dims, every extent >= 1, count and bytes in range). */
static bool model_extent(const sp_tensor *t, __int128 *numel, __int128 *lo, __int128 *hi)
{
    __int128 es = (__int128)sp_dtype_size(t->dtype);
    if (!es || t->ndim < 1 || t->ndim > SP_MAX_DIMS || t->offset < 0)
        return false;
    __int128 n = 1, min_el = t->offset, max_el = t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 1)
            return false;
        n *= t->shape[d];
        if (n > INT64_MAX)
            return false;
        __int128 span = (__int128)t->strides[d] * (t->shape[d] - 1);
        if (span < 0)
            min_el += span;
        else
            max_el += span;
    }
    if (min_el < 0 || max_el + 1 > (__int128)UINT64_MAX / es)
        return false;
    *numel = n;
    *lo = min_el * es;
    *hi = (max_el + 1) * es;
    return true;
}

static bool model_valid(const sp_tensor *t)
{
    __int128 n, lo, hi;
    return model_extent(t, &n, &lo, &hi) && hi <= (__int128)t->buf_bytes;
}

/* ---- 0: run arguments through staging ----------------------------------- */

#define FAKE_TEMP_BASE (1ull << 40)
#define FAKE_MAX_CALLS 2048

/* The fake device behind sp_host_api: one retained temp buffer, every call
 * recorded, nothing ever dereferenced on the host side. */
typedef struct fake_device {
    uint32_t slot;
    uint64_t temp_bytes; /* 0 until staging asked for it */
    int calls;
    int fail_at; /* fail the n-th call (1-based); 0: never */
    bool map_ok;
    int live_maps;
    int copies_in, copies_out;
    struct {
        uint64_t dev, bytes;
        const void *host;
    } in[FAKE_MAX_CALLS], out[FAKE_MAX_CALLS];
} fake_device;

static uint8_t fake_map_target[64];

/* One call: counted, maybe failed on purpose. */
static bool fake_call_fails(fake_device *f)
{
    return ++f->calls == f->fail_at;
}

static void fake_check_range(const fake_device *f, uint64_t dev, uint64_t bytes)
{
    /* Every device access staging makes lies inside the buffer it owns. */
    CHECK(f->temp_bytes > 0);
    CHECK(dev >= FAKE_TEMP_BASE && bytes <= f->temp_bytes &&
          dev - FAKE_TEMP_BASE <= f->temp_bytes - bytes);
}

static int fake_unexpected(void)
{
    CHECK(!"staging called a host-api function outside its contract");
    return SP_EINVAL;
}
static int fake_malloc(void *ctx, uint64_t bytes, uint64_t *dev)
{
    (void)ctx, (void)bytes, (void)dev;
    return fake_unexpected();
}
static int fake_free(void *ctx, uint64_t dev)
{
    (void)ctx, (void)dev;
    return fake_unexpected();
}
static int fake_memset(void *ctx, uint64_t dev, int v, uint64_t bytes)
{
    (void)ctx, (void)dev, (void)v, (void)bytes;
    return fake_unexpected();
}
static int fake_arena_commit(void *ctx, uint32_t bank, const sp_arena_request *req, sp_arena *out)
{
    (void)ctx, (void)bank, (void)req, (void)out;
    return fake_unexpected();
}
static int fake_upload(void *ctx, const void *blob, uint64_t bytes, uint64_t *dev)
{
    (void)ctx, (void)blob, (void)bytes, (void)dev;
    return fake_unexpected();
}

static int fake_copy_to(void *ctx, uint64_t dev, const void *host, uint64_t bytes)
{
    fake_device *f = ctx;
    fake_check_range(f, dev, bytes);
    if (fake_call_fails(f))
        return SP_EBOUNDS;
    CHECK(f->copies_in < FAKE_MAX_CALLS);
    f->in[f->copies_in].dev = dev, f->in[f->copies_in].bytes = bytes;
    f->in[f->copies_in++].host = host;
    return SP_OK;
}

static int fake_copy_from(void *ctx, void *host, uint64_t dev, uint64_t bytes)
{
    fake_device *f = ctx;
    fake_check_range(f, dev, bytes);
    if (fake_call_fails(f))
        return SP_EBOUNDS;
    CHECK(f->copies_out < FAKE_MAX_CALLS);
    f->out[f->copies_out].dev = dev, f->out[f->copies_out].bytes = bytes;
    f->out[f->copies_out++].host = host;
    return SP_OK;
}

static void *fake_map(void *ctx, uint64_t dev, uint64_t bytes)
{
    fake_device *f = ctx;
    fake_check_range(f, dev, bytes);
    if (!f->map_ok) /* not a failure: staging falls back to copies */
        return NULL;
    f->live_maps++;
    return fake_map_target;
}

static int fake_unmap(void *ctx, uint64_t dev)
{
    fake_device *f = ctx;
    fake_check_range(f, dev, 1);
    CHECK(f->live_maps > 0);
    f->live_maps--;
    return SP_OK;
}

static int fake_retained_temp(void *ctx, uint32_t slot, uint64_t bytes, uint64_t *dev)
{
    fake_device *f = ctx;
    CHECK(slot == f->slot && bytes > 0 && f->temp_bytes == 0);
    if (fake_call_fails(f) || bytes > UINT64_MAX - FAKE_TEMP_BASE)
        return SP_EDEVMEM;
    f->temp_bytes = bytes;
    *dev = FAKE_TEMP_BASE;
    return SP_OK;
}

static const sp_host_api_functions fake_functions = {
    .device_malloc = fake_malloc,
    .device_free = fake_free,
    .device_memset = fake_memset,
    .copy_to_device = fake_copy_to,
    .copy_from_device = fake_copy_from,
    .register_device_memory_to_host = fake_map,
    .unregister_device_memory_from_host = fake_unmap,
    .retained_temp_buffer = fake_retained_temp,
    .arena_commit = fake_arena_commit,
    .callable_upload = fake_upload,
};

static bool is_output(uint8_t dir)
{
    return dir == SP_OUT || dir == SP_INOUT || dir == SP_OUT_EXISTING;
}

/* Input: u16 tensor_count, u16 scalar_count, u8 flags (1: map for host,
 * 2: maps succeed), u8 fail_at, u8 slot, u8 err_len, then per tensor
 * (up to SP_MAX_RUN_TENSORS) u8 dir + a raw 128-byte sp_tensor, then scalars. */
static void fuzz_staging(reader *r)
{
    sp_args *args = calloc(1, sizeof *args);
    rt_staging *st = calloc(1, sizeof *st);
    fake_device *f = calloc(1, sizeof *f);
    CHECK(args && st && f);
    args->tensor_count = rd_u16(r);
    args->scalar_count = rd_u16(r);
    uint8_t flags = rd_u8(r);
    f->fail_at = rd_u8(r);
    f->slot = rd_u8(r) % SP_PIPELINE_MAX_DEPTH;
    f->map_ok = flags & 2;
    size_t err_len = rd_u8(r);
    uint32_t nt = args->tensor_count < SP_MAX_RUN_TENSORS ? args->tensor_count : SP_MAX_RUN_TENSORS;
    uint32_t ns = args->scalar_count < SP_MAX_RUN_SCALARS ? args->scalar_count : SP_MAX_RUN_SCALARS;
    for (uint32_t i = 0; i < nt; i++) {
        args->dirs[i] = rd_u8(r);
        take(r, &args->tensors[i], sizeof args->tensors[i]);
        /* A device-resident argument is not staged (no range of the temp
         * buffer); the module checks it against its buffers before
         * staging (rt_device_buffers, tests/worker/test_device_tensors.c). */
        args->tensors[i].flags &= (uint16_t)~SP_TENSOR_DEVICE;
    }
    for (uint32_t i = 0; i < ns; i++)
        args->scalars[i] = rd_u64(r);

    sp_host_api api = {.runner_ctx = f, .pipeline_slot = f->slot, .functions = &fake_functions};
    char *err = malloc(err_len ? err_len : 1);
    CHECK(err);
    if (err_len)
        err[0] = '\0';
    bool map = flags & 1;
    CHECK(rt_staging_stage(st, &api, NULL, map, false, err, err_len) == SP_EINVAL);
    int rc = rt_staging_stage(st, &api, args, map, false, err, err_len);
    if (rc != SP_OK) {
        CHECK(rc == SP_EINVAL || rc == SP_EDTYPE || rc == SP_ESHAPE || rc == SP_EDEVMEM ||
              rc == SP_EBOUNDS);
        CHECK(err_len == 0 || (memchr(err, '\0', err_len) && (err_len == 1 || err[0])));
        CHECK(f->live_maps == 0); /* a failed stage leaves nothing mapped */
        goto out;
    }

    /* Accepted: every argument is well formed and got its own range. */
    CHECK(args->tensor_count <= SP_MAX_RUN_TENSORS && args->scalar_count <= SP_MAX_RUN_SCALARS);
    CHECK(st->count == args->tensor_count);
    const sp_args *dev = &st->device_args;
    CHECK(dev->tensor_count == args->tensor_count && dev->scalar_count == args->scalar_count);
    CHECK(memcmp(dev->scalars, args->scalars, ns * sizeof args->scalars[0]) == 0);
    int in = 0;
    for (uint32_t i = 0; i < nt; i++) {
        const sp_tensor *h = &args->tensors[i];
        const rt_staged_tensor *s = &st->t[i];
        CHECK(args->dirs[i] >= SP_IN && args->dirs[i] <= SP_NO_DEP);
        CHECK(h->addr != 0 && h->buf_bytes > 0 && model_valid(h));
        CHECK(s->bytes == h->buf_bytes && s->host == (void *)(uintptr_t)h->addr);
        fake_check_range(f, s->dev, s->bytes);
        for (uint32_t j = 0; j < i; j++)
            CHECK(s->dev >= st->t[j].dev + st->t[j].bytes || st->t[j].dev >= s->dev + s->bytes);
        const sp_tensor *d = &dev->tensors[i];
        CHECK(dev->dirs[i] == args->dirs[i] && d->addr == s->dev && d->owner_task == SP_NO_TASK);
        CHECK(d->buf_bytes == h->buf_bytes && d->offset == h->offset && d->dtype == h->dtype &&
              d->ndim == h->ndim && memcmp(d->shape, h->shape, sizeof d->shape) == 0 &&
              memcmp(d->strides, h->strides, sizeof d->strides) == 0);
        CHECK(model_valid(d));
        CHECK((s->host_map != NULL) == (map && f->map_ok));
        if (args->dirs[i] != SP_OUT) {
            CHECK(in < f->copies_in && f->in[in].dev == s->dev && f->in[in].bytes == s->bytes &&
                  f->in[in].host == s->host);
            in++;
        }
    }
    CHECK(in == f->copies_in);

    rt_staging_unmap(st, &api);
    CHECK(f->live_maps == 0);
    rc = rt_staging_copy_back(st, &api, err, err_len);
    CHECK(rc == SP_OK || rc == SP_EBOUNDS);
    if (rc == SP_OK) {
        int out = 0;
        for (uint32_t i = 0; i < nt; i++) {
            if (!is_output(args->dirs[i]))
                continue;
            CHECK(out < f->copies_out && f->out[out].dev == st->t[i].dev &&
                  f->out[out].bytes == st->t[i].bytes && f->out[out].host == st->t[i].host);
            out++;
        }
        CHECK(out == f->copies_out);
    }
    rt_staging_release(st, &api);
    CHECK(st->count == 0 && f->live_maps == 0);
out:
    free(err);
    free(f);
    free(st);
    free(args);
}

/* ---- 1: a task against a callable --------------------------------------- */

#define FUZZ_MAX_KERNELS 8
#define FUZZ_MAX_RANGES 8

static const uint32_t lane_core[SP_LANES] = {SP_CORE_AIC, SP_CORE_AIV, SP_CORE_AIV};

static bool lane_allowed(uint8_t shape, int lane)
{
    switch (shape) {
    case SP_SHAPE_AIC:
        return lane == SP_LANE_AIC;
    case SP_SHAPE_AIV:
        return lane == SP_LANE_AIV0;
    case SP_SHAPE_MIX:
        return true;
    default:
        return false;
    }
}

static bool holds(const rt_range *r, uint64_t addr, uint64_t bytes)
{
    return addr >= r->dev && (__int128)addr + bytes <= (__int128)r->dev + r->bytes;
}

/* The signature rule, restated: direction characters match, a fresh output
 * may stand for an existing one and back, scalars are 's'. */
static void check_signature_match(const sp_task *t, const char *sig)
{
    static const char dir_char[] = {'?', 'i', 'o', 'x', 'e', 'n'};
    if (!sig[0])
        return;
    CHECK(strlen(sig) == (size_t)t->tensor_count + t->scalar_count);
    for (int i = 0; i < t->tensor_count; i++) {
        char d = dir_char[t->dirs[i]];
        CHECK(sig[i] == d || (sig[i] == 'e' && d == 'o') || (sig[i] == 'o' && d == 'e'));
    }
    for (int i = t->tensor_count; i < t->tensor_count + t->scalar_count; i++)
        CHECK(sig[i] == 's');
}

/* A callable as a validated blob would give: func_ids >= 0 and unique,
 * signatures of "ioxens" within the task limits. */
static void read_callable(reader *r, rt_loaded_callable *lc, rt_loaded_kernel *k, char (*sig)[64])
{
    memset(lc, 0, sizeof *lc);
    lc->kernels = k;
    uint32_t want = rd_u8(r) % (FUZZ_MAX_KERNELS + 1);
    for (uint32_t i = 0; i < want; i++) {
        int32_t func_id = rd_i32(r);
        uint32_t core = rd_u8(r) & 1;
        uint8_t len = rd_u8(r) % 52;
        int tensors = 0, scalars = 0, n = 0;
        char *s = sig[lc->kernel_count];
        for (uint8_t j = 0; j < len; j++) {
            char c = "ioxens"[rd_u8(r) % 6];
            if (c == 's' ? scalars++ < SP_MAX_TASK_SCALARS : tensors++ < SP_MAX_TASK_TENSORS)
                s[n++] = c;
        }
        s[n] = '\0';
        if (func_id < 0 || rt_loaded_callable_kernel(lc, func_id) >= 0)
            continue;
        k[lc->kernel_count] = (rt_loaded_kernel){
            .func_id = func_id, .core_type = core, .entry = "fuzz_kernel", .signature = s};
        if (func_id < SP_FUNC_ID_DIRECT)
            lc->by_func_id[func_id] = (int16_t)(lc->kernel_count + 1);
        lc->kernel_count++;
    }
}

/* Input: the callable (u8 count, per kernel i32 func_id, u8 core, u8 len,
 * len signature bytes), u8 range count, u64 dev + u64 bytes per range and
 * for the heap, u64 task id, u8 msg_len, then the task: u8 shape,
 * tensor_count, scalar_count, dep_count, overflow, u32 block_num,
 * i32 func_id[3], u8 dirs[32], u32 NULL-tensor mask, a raw sp_tensor per
 * tensor (up to 32), i64 per dependency (up to 16). */
static void fuzz_task(reader *r)
{
    rt_loaded_callable *lc = calloc(1, sizeof *lc);
    rt_loaded_kernel k[FUZZ_MAX_KERNELS];
    char sig[FUZZ_MAX_KERNELS][64];
    CHECK(lc);
    read_callable(r, lc, k, sig);
    /* Validation reads the callable's device view, as both runtimes give it. */
    void *dcb = malloc(rt_dev_callable_bytes(lc));
    CHECK(dcb);
    const rt_dev_callable *dc = rt_dev_callable_write(lc, dcb, (uint64_t)(uintptr_t)dcb);

    rt_range ranges[FUZZ_MAX_RANGES];
    uint32_t range_count = rd_u8(r) % (FUZZ_MAX_RANGES + 1);
    for (uint32_t i = 0; i < range_count; i++)
        ranges[i].dev = rd_u64(r), ranges[i].bytes = rd_u64(r);
    rt_range heap = {rd_u64(r), 0};
    heap.bytes = rd_u64(r);
    uint64_t id = rd_u64(r);
    size_t msg_len = rd_u8(r);
    char *msg = malloc(msg_len ? msg_len : 1);
    CHECK(msg);
    if (msg_len)
        msg[0] = '\0';
    rt_task_check c = {.callable = dc,
                       .ranges = range_count ? ranges : NULL,
                       .range_count = range_count,
                       .heap = heap,
                       .msg = msg,
                       .msg_len = msg_len};

    sp_task t;
    memset(&t, 0, sizeof t);
    t.shape = rd_u8(r);
    t.tensor_count = rd_u8(r);
    t.scalar_count = rd_u8(r);
    t.dep_count = rd_u8(r);
    t.overflow = rd_u8(r);
    t.block_num = rd_u32(r);
    for (int l = 0; l < SP_LANES; l++)
        t.func_id[l] = rd_i32(r);
    take(r, t.dirs, sizeof t.dirs);
    uint32_t null_mask = rd_u32(r);
    int nt = t.tensor_count < SP_MAX_TASK_TENSORS ? t.tensor_count : SP_MAX_TASK_TENSORS;
    for (int i = 0; i < nt; i++) {
        sp_tensor x;
        take(r, &x, sizeof x);
        if (null_mask & (1u << i))
            continue;
        /* One exact-size allocation each: an overread is an ASan report. */
        t.tensors[i] = malloc(sizeof x);
        CHECK(t.tensors[i]);
        memcpy(t.tensors[i], &x, sizeof x);
    }
    int nd = t.dep_count < SP_MAX_EXPLICIT_DEPS ? t.dep_count : SP_MAX_EXPLICIT_DEPS;
    for (int i = 0; i < nd; i++)
        t.deps[i] = rd_i64(r);

    int32_t kernel[3] = {-2, -2, -2};
    CHECK(rt_task_validate(&c, id, NULL, kernel) == SP_EINVAL);
    int rc = rt_task_validate(&c, id, &t, kernel);
    /* Through a lane and a view memo, the first time (misses) and again
     * (hits): the same verdict and kernels as without them. */
    rt_lane_memo memo[SP_LANE_MEMO_SLOTS];
    rt_view_memo view;
    memset(memo, 0, sizeof memo);
    memset(&view, 0, sizeof view);
    rt_task_check cm = c;
    cm.memo = memo;
    cm.view = &view;
    for (int pass = 0; pass < 2; pass++) {
        int32_t km[3] = {-2, -2, -2};
        CHECK(rt_task_validate(&cm, id, &t, km) == rc);
        CHECK(rc != SP_OK || memcmp(km, kernel, sizeof km) == 0);
    }
    if (rc != SP_OK) {
        CHECK(rc == SP_ETASK_ARGS || rc == SP_EFUNC_ID || rc == SP_EDTYPE || rc == SP_ESHAPE ||
              rc == SP_EBOUNDS || rc == SP_EDEP);
        CHECK(msg_len == 0 || (memchr(msg, '\0', msg_len) && (msg_len == 1 || msg[0])));
        goto out;
    }

    /* Accepted: restate every rule the task passed. */
    CHECK(!t.overflow && t.tensor_count <= SP_MAX_TASK_TENSORS &&
          t.scalar_count <= SP_MAX_TASK_SCALARS && t.dep_count <= SP_MAX_EXPLICIT_DEPS);
    CHECK(t.shape <= SP_SHAPE_MIX && t.block_num >= 1 &&
          t.block_num <= (t.shape == SP_SHAPE_DUMMY ? 1u : SP_MAX_BLOCKS));
    int lanes = 0;
    for (int l = 0; l < SP_LANES; l++) {
        if (t.func_id[l] == SP_FUNC_NONE) {
            CHECK(kernel[l] == -1);
            continue;
        }
        CHECK(lane_allowed(t.shape, l));
        CHECK(kernel[l] >= 0 && (uint32_t)kernel[l] < lc->kernel_count);
        const rt_loaded_kernel *lk = &lc->kernels[kernel[l]];
        CHECK(lk->func_id == t.func_id[l] && lk->core_type == lane_core[l]);
        check_signature_match(&t, lk->signature);
        lanes++;
    }
    CHECK(t.shape == SP_SHAPE_DUMMY || lanes > 0);
    for (int i = 0; i < t.tensor_count; i++) {
        const sp_tensor *x = t.tensors[i];
        CHECK(x && t.dirs[i] >= SP_IN && t.dirs[i] <= SP_NO_DEP && sp_dtype_size(x->dtype));
        if (t.dirs[i] == SP_OUT) {
            CHECK(sp_tensor_numel(x) > 0); /* the runtime allocates its buffer */
            continue;
        }
        CHECK(model_valid(x));
        bool placed = holds(&heap, x->addr, x->buf_bytes);
        for (uint32_t j = 0; !placed && j < range_count; j++)
            placed = holds(&ranges[j], x->addr, x->buf_bytes);
        CHECK(placed);
    }
    for (int i = 0; i < t.dep_count; i++)
        CHECK(t.deps[i] >= 0 && (uint64_t)t.deps[i] < id);
out:
    for (int i = 0; i < nt; i++)
        free(t.tensors[i]);
    free(msg);
    free(dcb);
    free(lc);
}

/* ---- 2: the view helpers of simpler/tensor.h ---------------------------- */

/* Input: a raw sp_tensor, then i32 dim, i64 start, i64 len, i32 d0, i32 d1,
 * u8 ndim, i64 shape[5], i64 index, u8 dtype, u64 addr. */
static void fuzz_views(reader *r)
{
    sp_tensor *in = malloc(sizeof *in); /* exact size: overreads are reported */
    CHECK(in);
    take(r, in, sizeof *in);
    int32_t dim = rd_i32(r);
    int64_t start = rd_i64(r), len = rd_i64(r);
    int32_t d0 = rd_i32(r), d1 = rd_i32(r);
    int ndim = rd_u8(r) % (SP_MAX_DIMS + 2);
    int64_t shape[SP_MAX_DIMS];
    for (int d = 0; d < SP_MAX_DIMS; d++)
        shape[d] = rd_i64(r);
    int64_t index = rd_i64(r);
    int dtype = rd_u8(r);
    uint64_t addr = rd_u64(r);

    __int128 n, lo, hi;
    bool well_formed = model_extent(in, &n, &lo, &hi);
    bool valid = well_formed && hi <= (__int128)in->buf_bytes;
    uint64_t elo = 0, ehi = 0;
    int rc = sp_tensor_byte_extent(in, &elo, &ehi);
    CHECK((rc == SP_OK) == well_formed);
    if (well_formed)
        CHECK(elo == (uint64_t)lo && ehi == (uint64_t)hi && sp_tensor_numel(in) == (int64_t)n);
    CHECK(sp_tensor_is_valid(in) == valid);
    /* Contiguity is about shape and strides only (offset and dtype aside). */
    if (sp_tensor_is_contiguous(in)) {
        CHECK(sp_tensor_numel(in) > 0);
        if (well_formed)
            CHECK(hi - lo == n * (__int128)sp_dtype_size(in->dtype));
    }

    sp_tensor out;
    __int128 olo, ohi, on;
    CHECK(sp_tensor_slice(NULL, dim, start, len, &out) == SP_EINVAL &&
          sp_tensor_reshape(in, ndim, NULL, &out) == SP_EINVAL &&
          sp_tensor_transpose(in, d0, d1, NULL) == SP_EINVAL &&
          sp_tensor_init(NULL, addr, dtype, ndim, shape) == SP_EINVAL);
    if (sp_tensor_slice(in, dim, start, len, &out) == SP_OK) {
        CHECK(dim >= 0 && dim < in->ndim && in->ndim <= SP_MAX_DIMS);
        CHECK(start >= 0 && len >= 1 && (__int128)start + len <= in->shape[dim]);
        CHECK(out.ndim == in->ndim && out.shape[dim] == len);
        CHECK((__int128)out.offset == (__int128)in->offset + (__int128)start * in->strides[dim]);
        CHECK(model_valid(&out));
        if (valid) {
            CHECK(model_extent(&out, &on, &olo, &ohi));
            CHECK(olo >= lo && ohi <= hi);
        }
    }
    if (sp_tensor_reshape(in, ndim, shape, &out) == SP_OK) {
        CHECK(sp_tensor_is_contiguous(in) && sp_tensor_is_contiguous(&out));
        CHECK(out.ndim == ndim && sp_tensor_numel(&out) == sp_tensor_numel(in));
        if (valid) {
            CHECK(model_extent(&out, &on, &olo, &ohi) && olo == lo && ohi == hi);
            CHECK(model_valid(&out));
        }
    }
    if (sp_tensor_transpose(in, d0, d1, &out) == SP_OK) {
        CHECK(in->ndim <= SP_MAX_DIMS && d0 >= 0 && d1 >= 0 && d0 < in->ndim && d1 < in->ndim);
        CHECK(out.shape[d0] == in->shape[d1] && out.strides[d1] == in->strides[d0]);
        if (valid)
            CHECK(model_extent(&out, &on, &olo, &ohi) && olo == lo && ohi == hi);
    }
    uint64_t off = 0;
    if (sp_tensor_element_offset(in, index, &off) == SP_OK) {
        CHECK(valid && index >= 0 && index < n);
        /* The element, by the row-major walk, in 128-bit arithmetic. */
        __int128 el = in->offset, rest = index;
        for (int d = in->ndim - 1; d >= 0; d--) {
            el += (rest % in->shape[d]) * (__int128)in->strides[d];
            rest /= in->shape[d];
        }
        __int128 es = (__int128)sp_dtype_size(in->dtype);
        CHECK((__int128)off == el * es && off >= lo && (__int128)off + es <= hi);
    }
    sp_tensor fresh;
    if (sp_tensor_init(&fresh, addr, dtype, ndim, shape) == SP_OK) {
        CHECK(model_extent(&fresh, &on, &olo, &ohi));
        CHECK(olo == 0 && ohi == (__int128)fresh.buf_bytes && sp_tensor_is_contiguous(&fresh));
        CHECK(fresh.addr == addr && fresh.dtype == dtype && fresh.ndim == ndim);
    }
    free(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    switch (rd_u8(&r) % 3) {
    case 0:
        fuzz_staging(&r);
        break;
    case 1:
        fuzz_task(&r);
        break;
    default:
        fuzz_views(&r);
        break;
    }
    return 0;
}
