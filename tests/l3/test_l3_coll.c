/* The collectives' executor (src/l3/l3_coll.c, l3_reduce.c) on plain host
 * buffers: the half-precision converters against the compiler's _Float16,
 * l3_reduce against a plain reference, the checks and byte ranges, every
 * kind x dtype x op at level 3 (all members in this process) and at level 4
 * over an in-process fake transport (two to four "ranks", each its own
 * l3_coll seeing only its own members' windows), against a plain
 * reference of what every window must hold afterwards. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/wait.h"
#include "l3/l3_coll.h"
#include "l3_coll_ref.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

/* ---- half converters ------------------------------------------------------------ */

Test(l3_half, widening_is_exact_for_every_half)
{
    for (uint32_t b = 0; b < 65536; b++) {
        float want = (float)h_from_bits((uint16_t)b);
        float got = l3_f16_to_float((uint16_t)b);
        if (isnan(want)) {
            cr_assert(isnan(got), "half 0x%04x: want NaN, got %a", b, (double)got);
            cr_assert_eq(signbit(got) != 0, signbit(want) != 0, "half 0x%04x: NaN sign", b);
        } else {
            cr_assert_eq(f32_bits(got), f32_bits(want), "half 0x%04x: want %a got %a", b,
                         (double)want, (double)got);
        }
    }
}

Test(l3_half, every_half_round_trips)
{
    for (uint32_t b = 0; b < 65536; b++) {
        uint16_t back = l3_f16_from_float(l3_f16_to_float((uint16_t)b));
        if ((b & 0x7c00u) == 0x7c00u && (b & 0x3ffu)) {
            cr_assert((back & 0x7c00u) == 0x7c00u && (back & 0x3ffu), "NaN 0x%04x -> 0x%04x", b,
                      back);
            cr_assert_eq(back & 0x8000u, b & 0x8000u, "NaN sign 0x%04x", b);
        } else {
            cr_assert_eq(back, b, "half 0x%04x came back as 0x%04x", b, back);
        }
    }
}

static void check_narrow(float f)
{
    uint16_t want = h_bits((_Float16)f);
    uint16_t got = l3_f16_from_float(f);
    if (isnan(f))
        cr_assert((got & 0x7c00u) == 0x7c00u && (got & 0x3ffu), "%a: want NaN, got 0x%04x",
                  (double)f, got);
    else
        cr_assert_eq(got, want, "%a (0x%08x): want 0x%04x got 0x%04x", (double)f, f32_bits(f), want,
                     got);
}

Test(l3_half, narrowing_rounds_to_nearest_even)
{
    /* every midpoint between neighbouring halves (the ties), and a float
     * just either side of it */
    for (uint32_t b = 0; b < 0x7c00u; b++) {
        float lo = (float)h_from_bits((uint16_t)b), hi = (float)h_from_bits((uint16_t)(b + 1));
        float mid = lo + (hi - lo) / 2; /* exact in float */
        check_narrow(mid);
        check_narrow(-mid);
        check_narrow(nextafterf(mid, 0.0f));
        check_narrow(nextafterf(mid, INFINITY));
        check_narrow(-nextafterf(mid, INFINITY));
    }
    const float edge[] = {0.0f,       -0.0f,     65504.0f, 65519.99f,    65520.0f, 1e10f,
                          INFINITY,   -INFINITY, NAN,      -NAN,         0x1p-24f, 0x1p-25f,
                          0x1.8p-25f, 0x1p-26f,  0x1p-14f, 0x1.ff8p-15f, 1e-30f,   -1e-30f};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        check_narrow(edge[i]);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 2000000; i++)
        check_narrow(f32_from_bits((uint32_t)rng_next(&s)));
}

/* ---- l3_reduce -------------------------------------------------------------------- */

static const int red_dtypes[] = {SP_DTYPE_F32, SP_DTYPE_F16, SP_DTYPE_I32};
static const int red_ops[] = {SP_L3_SUM, SP_L3_MAX};

Test(l3_reduce, matches_the_reference_for_every_dtype_op_and_length)
{
    const uint64_t lens[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 1001, 4099};
    uint64_t s = 12345;
    for (size_t d = 0; d < 3; d++)
        for (size_t o = 0; o < 2; o++)
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                int dtype = red_dtypes[d], op = red_ops[o];
                uint64_t n = lens[l];
                size_t es = sp_dtype_size(dtype);
                /* one spare element each side: nothing outside is touched */
                uint8_t *dst = malloc((n + 2) * es), *src = malloc((n + 2) * es),
                        *ref = malloc((n + 2) * es);
                fill(dst, n + 2, dtype, &s, 1);
                fill(src, n + 2, dtype, &s, 1);
                memcpy(ref, dst, (n + 2) * es);
                for (uint64_t i = 1; i <= n; i++)
                    ref_combine(ref + i * es, src + i * es, dtype, op);
                l3_reduce(dst + es, src + es, n, dtype, op);
                for (uint64_t i = 0; i < n + 2; i++)
                    cr_assert(same_element(dst + i * es, ref + i * es, dtype),
                              "dtype %d op %d len %llu: element %llu differs", dtype, op,
                              (unsigned long long)n, (unsigned long long)i);
                free(dst);
                free(src);
                free(ref);
            }
}

Test(l3_reduce, i32_sum_wraps_and_max_is_signed)
{
    int32_t d[3] = {INT32_MAX, -5, INT32_MIN}, s[3] = {1, 3, -1};
    l3_reduce(d, s, 3, SP_DTYPE_I32, SP_L3_SUM);
    cr_assert_eq(d[0], INT32_MIN);
    cr_assert_eq(d[1], -2);
    cr_assert_eq(d[2], INT32_MAX);
    int32_t m[2] = {-7, 4}, t[2] = {-3, -9};
    l3_reduce(m, t, 2, SP_DTYPE_I32, SP_L3_MAX);
    cr_assert_eq(m[0], -3);
    cr_assert_eq(m[1], 4);
}

Test(l3_reduce, f16_sum_rounds_overflows_and_keeps_subnormals)
{
    /* 2048 + 1 is a tie between 2048 and 2050: even gives 2048; 2050 + 1
     * gives 2052; 65504 + 65504 overflows to inf; two smallest subnormals
     * make the next one. */
    uint16_t d[4] = {h_bits(2048), h_bits(2050), h_bits(65504), 0x0001};
    uint16_t s[4] = {h_bits(1), h_bits(1), h_bits(65504), 0x0001};
    l3_reduce(d, s, 4, SP_DTYPE_F16, SP_L3_SUM);
    cr_assert_eq(d[0], h_bits(2048));
    cr_assert_eq(d[1], h_bits(2052));
    cr_assert_eq(d[2], 0x7c00);
    cr_assert_eq(d[3], 0x0002);
}

Test(l3_reduce, max_propagates_nan)
{
    float d[3] = {1.0f, NAN, -0.0f}, s[3] = {NAN, 2.0f, 0.0f};
    l3_reduce(d, s, 3, SP_DTYPE_F32, SP_L3_MAX);
    cr_assert(isnan(d[0]));
    cr_assert(isnan(d[1]));
    cr_assert_eq(d[2], 0.0f);
}

Test(l3_reduce, in_place_on_one_buffer)
{
    float f[3] = {1.5f, -2.0f, 3.0f};
    l3_reduce(f, f, 3, SP_DTYPE_F32, SP_L3_SUM);
    cr_assert(f[0] == 3.0f && f[1] == -4.0f && f[2] == 6.0f);
    int32_t i[2] = {INT32_MAX, 5};
    l3_reduce(i, i, 2, SP_DTYPE_I32, SP_L3_SUM);
    cr_assert(i[0] == -2 && i[1] == 10);
    uint16_t h[1] = {h_bits(1.5)};
    l3_reduce(h, h, 1, SP_DTYPE_F16, SP_L3_SUM);
    cr_assert_eq(h[0], h_bits(3));
    l3_reduce(h, h, 1, SP_DTYPE_F16, SP_L3_MAX);
    cr_assert_eq(h[0], h_bits(3));
}

/* ---- checks and ranges ------------------------------------------------------------ */

static l3_coll base_coll(l3_coll_kind kind, uint32_t n)
{
    l3_coll c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.dtype = SP_DTYPE_F32;
    c.op = SP_L3_SUM;
    c.n = n;
    c.count = 4;
    c.in_off = 0;
    c.out_off = 1024;
    c.window_bytes = 4096;
    return c;
}

static void expect_check(const l3_coll *c, int want, const char *needle)
{
    char err[256] = "";
    int rc = l3_coll_check(c, err, sizeof err);
    cr_assert_eq(rc, want, "want %d (%s), got %d: %s", want, needle, rc, err);
    if (needle)
        cr_assert(strstr(err, needle), "message \"%s\" lacks \"%s\"", err, needle);
}

Test(l3_coll_check, accepts_good_collectives_and_count_zero)
{
    for (int k = L3_COLL_ALLREDUCE; k <= L3_COLL_ALLTOALL; k++) {
        l3_coll c = base_coll((l3_coll_kind)k, 4);
        expect_check(&c, SP_OK, NULL);
        c.count = 0;
        expect_check(&c, SP_OK, NULL);
    }
    /* blocks of data-movement kinds may be of any dtype */
    l3_coll c = base_coll(L3_COLL_ALLGATHER, 2);
    c.dtype = SP_DTYPE_BF16;
    expect_check(&c, SP_OK, NULL);
    /* adjacent input and output do not overlap */
    c = base_coll(L3_COLL_ALLTOALL, 4);
    c.in_off = 0, c.out_off = 64;
    expect_check(&c, SP_OK, NULL);
    /* exactly filling the window */
    c = base_coll(L3_COLL_ALLGATHER, 4);
    c.out_off = 4096 - 64;
    expect_check(&c, SP_OK, NULL);
}

Test(l3_coll_check, names_each_bad_input)
{
    l3_coll c = base_coll((l3_coll_kind)9, 2);
    expect_check(&c, SP_EINVAL, "unknown kind");
    expect_check(NULL, SP_EINVAL, "NULL");
    c = base_coll(L3_COLL_ALLREDUCE, 0);
    expect_check(&c, SP_EINVAL, "members");
    c = base_coll(L3_COLL_ALLREDUCE, SP_L3_MAX_DOMAIN_CHIPS + 1);
    expect_check(&c, SP_EINVAL, "members");
    c = base_coll(L3_COLL_ALLREDUCE, 2);
    c.dtype = 0;
    expect_check(&c, SP_EDTYPE, "dtype");
    c.dtype = SP_DTYPE_BF16;
    expect_check(&c, SP_EDTYPE, "cannot be reduced");
    c = base_coll(L3_COLL_REDUCE_SCATTER, 2);
    c.dtype = SP_DTYPE_U8;
    expect_check(&c, SP_EDTYPE, "reduce_scatter");
    c = base_coll(L3_COLL_ALLREDUCE, 2);
    c.op = 7;
    expect_check(&c, SP_EINVAL, "reduce op");
    c = base_coll(L3_COLL_BROADCAST, 3);
    c.root = 3;
    expect_check(&c, SP_EINVAL, "root 3");
    c = base_coll(L3_COLL_ALLREDUCE, 2);
    c.in_off = 4096 - 8;
    expect_check(&c, SP_EBOUNDS, "input");
    c.in_off = UINT64_MAX - 4;
    expect_check(&c, SP_EBOUNDS, "input");
    c = base_coll(L3_COLL_ALLGATHER, 4);
    c.out_off = 4096 - 32; /* 4 blocks of 16 bytes need 64 */
    expect_check(&c, SP_EBOUNDS, "output");
    c = base_coll(L3_COLL_REDUCE_SCATTER, 4);
    c.in_off = 4096 - 32;
    c.out_off = 0;
    expect_check(&c, SP_EBOUNDS, "input");
    c = base_coll(L3_COLL_ALLTOALL, 2);
    c.count = UINT64_MAX / 4;
    expect_check(&c, SP_EBOUNDS, "overflow");
    /* overlapping input and output */
    c = base_coll(L3_COLL_ALLGATHER, 4);
    c.in_off = 16, c.out_off = 0; /* the input is block 1 of the output */
    expect_check(&c, SP_EINVAL, "overlap");
    c = base_coll(L3_COLL_REDUCE_SCATTER, 4);
    c.in_off = 0, c.out_off = 48;
    expect_check(&c, SP_EINVAL, "overlap");
    c = base_coll(L3_COLL_ALLTOALL, 4);
    c.in_off = 32, c.out_off = 0;
    expect_check(&c, SP_EINVAL, "overlap");
    /* a transport's tags stay below 2^20 */
    static const sp_l3_transport dummy;
    c = base_coll(L3_COLL_ALLREDUCE, 2);
    c.transport = &dummy;
    c.tag = 1u << 20;
    expect_check(&c, SP_EINVAL, "tag");
}

static void expect_ranges(const l3_coll *c, uint32_t m, uint64_t rl, uint64_t rh, uint64_t wl,
                          uint64_t wh)
{
    uint64_t a, b, x, y;
    l3_coll_ranges(c, m, &a, &b, &x, &y);
    cr_assert(b - a == rh - rl && (rh == rl || a == rl), "kind %d member %u reads [%llu,%llu)",
              c->kind, m, (unsigned long long)a, (unsigned long long)b);
    cr_assert(y - x == wh - wl && (wh == wl || x == wl), "kind %d member %u writes [%llu,%llu)",
              c->kind, m, (unsigned long long)x, (unsigned long long)y);
}

Test(l3_coll_ranges, exactly_what_each_member_touches)
{
    /* 4 members, 4 f32 per block: B = 16 bytes */
    l3_coll c = base_coll(L3_COLL_ALLREDUCE, 4);
    c.in_off = 100;
    for (uint32_t m = 0; m < 4; m++)
        expect_ranges(&c, m, 100, 116, 100, 116);
    c = base_coll(L3_COLL_ALLGATHER, 4);
    for (uint32_t m = 0; m < 4; m++)
        expect_ranges(&c, m, 0, 16, 1024, 1088);
    c = base_coll(L3_COLL_REDUCE_SCATTER, 4);
    for (uint32_t m = 0; m < 4; m++)
        expect_ranges(&c, m, 0, 64, 1024, 1040);
    c = base_coll(L3_COLL_BROADCAST, 4);
    c.root = 2;
    c.in_off = 8;
    for (uint32_t m = 0; m < 4; m++)
        if (m == 2)
            expect_ranges(&c, m, 8, 24, 0, 0);
        else
            expect_ranges(&c, m, 0, 0, 8, 24);
    c = base_coll(L3_COLL_ALLTOALL, 4);
    for (uint32_t m = 0; m < 4; m++)
        expect_ranges(&c, m, 0, 64, 1024, 1088);
    c.count = 0;
    expect_ranges(&c, 1, 0, 0, 0, 0);
    c.count = 4;
    expect_ranges(&c, 4, 0, 0, 0, 0); /* not a member */
}

typedef struct done_probe {
    sp__waitword word;
    _Atomic int calls;
    int status, peer;
} done_probe;

static void probe_done(void *user, int status, int peer)
{
    done_probe *p = user;
    p->status = status;
    p->peer = peer;
    atomic_fetch_add(&p->calls, 1);
    sp__waitword_store(&p->word, 1);
}

static void wait_probe(done_probe *p)
{
    int timed_out = 0;
    sp__waitword_wait_ne(&p->word, 0, NULL, sp_now_ns() + 20ull * 1000 * 1000 * 1000, &timed_out);
    cr_assert(!timed_out, "the collective never completed");
}

/* A layout for `kind` over n members: where the blocks go in a window. */
static void layout(l3_coll *c, uint64_t count, uint64_t *window)
{
    size_t es = sp_dtype_size(c->dtype);
    uint64_t all = count * es * c->n;
    c->count = count;
    c->in_off = es * 3; /* not at 0: the bytes before stay untouched */
    c->out_off = c->in_off + all + es * 2;
    *window = c->out_off + all + es * 5;
    c->window_bytes = *window;
}

static void run_level3(l3_coll_kind kind, int dtype, int op, uint32_t n, uint64_t count,
                       uint32_t root, uint64_t *seed)
{
    l3_coll c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.dtype = dtype;
    c.op = op;
    c.n = n;
    c.root = root;
    uint64_t wb;
    layout(&c, count, &wb);
    uint8_t *before[4], *after[4];
    for (uint32_t m = 0; m < n; m++) {
        before[m] = malloc(wb);
        after[m] = malloc(wb);
        c.win[m] = malloc(wb);
        fill(before[m], wb / sp_dtype_size(dtype), dtype, seed, 0);
        memcpy(c.win[m], before[m], wb);
    }
    reference(&c, before, after);
    l3_coll_exec x;
    done_probe p = {.status = 1};
    cr_assert_eq(l3_coll_start(&x, &c, probe_done, &p), SP_OK);
    /* level 3 completes inline */
    cr_assert_eq(atomic_load(&p.calls), 1);
    cr_assert_eq(p.status, SP_OK);
    cr_assert_eq(p.peer, -1);
    expect_windows(&c, c.win, after, "level 3");
    l3_coll_exec_release(&x);
    for (uint32_t m = 0; m < n; m++) {
        free(before[m]);
        free(after[m]);
        free(c.win[m]);
    }
}

static const int move_dtypes[] = {SP_DTYPE_F32, SP_DTYPE_F16, SP_DTYPE_I32, SP_DTYPE_U8,
                                  SP_DTYPE_F64};
static const uint64_t counts[] = {1, 2, 3, 5, 17, 1000};

Test(l3_coll_level3, every_kind_dtype_op_and_size)
{
    uint64_t seed = 777;
    for (int k = L3_COLL_ALLREDUCE; k <= L3_COLL_ALLTOALL; k++)
        for (uint32_t n = 1; n <= 4; n++)
            for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
                if (k == L3_COLL_ALLREDUCE || k == L3_COLL_REDUCE_SCATTER) {
                    for (size_t d = 0; d < 3; d++)
                        for (size_t o = 0; o < 2; o++)
                            run_level3((l3_coll_kind)k, red_dtypes[d], red_ops[o], n, counts[ci], 0,
                                       &seed);
                } else {
                    for (size_t d = 0; d < sizeof move_dtypes / sizeof move_dtypes[0]; d++)
                        run_level3((l3_coll_kind)k, move_dtypes[d], 0, n, counts[ci], n - 1, &seed);
                }
            }
}

Test(l3_coll_level3, blocks_larger_than_a_chunk)
{
    /* past the 64 KiB pieces allreduce and reduce_scatter work in, with a
     * ragged last piece */
    uint64_t seed = 99;
    for (uint32_t n = 2; n <= 4; n++) {
        run_level3(L3_COLL_ALLREDUCE, SP_DTYPE_F32, SP_L3_SUM, n, 3 * 16384 + 11, 0, &seed);
        run_level3(L3_COLL_ALLREDUCE, SP_DTYPE_F16, SP_L3_MAX, n, 2 * 32768 + 7, 0, &seed);
        run_level3(L3_COLL_REDUCE_SCATTER, SP_DTYPE_I32, SP_L3_SUM, n, 16384 + 5, 0, &seed);
    }
}

Test(l3_coll_level3, broadcast_from_every_root)
{
    uint64_t seed = 5;
    for (uint32_t n = 1; n <= 4; n++)
        for (uint32_t r = 0; r < n; r++)
            run_level3(L3_COLL_BROADCAST, SP_DTYPE_F16, 0, n, 9, r, &seed);
}

Test(l3_coll_level3, count_zero_is_a_no_op_and_bytes_are_counted)
{
    l3_coll c = base_coll(L3_COLL_ALLGATHER, 2);
    uint8_t w0[4096], w1[4096];
    memset(w0, 0xab, sizeof w0);
    memset(w1, 0xcd, sizeof w1);
    c.win[0] = w0, c.win[1] = w1;
    c.count = 0;
    l3_coll_exec x;
    done_probe p = {.status = 1};
    cr_assert_eq(l3_coll_start(&x, &c, probe_done, &p), SP_OK);
    cr_assert_eq(atomic_load(&p.calls), 1);
    cr_assert_eq(p.status, SP_OK);
    cr_assert_eq(x.bytes_moved, 0);
    for (size_t i = 0; i < sizeof w0; i++)
        cr_assert(w0[i] == 0xab && w1[i] == 0xcd);
    c.count = 4; /* 2 members x 2 blocks of 16 bytes written */
    done_probe q = {.status = 1};
    cr_assert_eq(l3_coll_start(&x, &c, probe_done, &q), SP_OK);
    cr_assert_eq(x.bytes_moved, 64);
    l3_coll_exec_release(&x);
}

Test(l3_coll_level3, refuses_without_calling_done)
{
    l3_coll c = base_coll(L3_COLL_ALLREDUCE, 2);
    uint8_t w0[4096];
    c.win[0] = w0; /* member 1 has no window and there is no transport */
    l3_coll_exec x;
    done_probe p = {0};
    cr_assert_eq(l3_coll_start(&x, &c, probe_done, &p), SP_EINVAL);
    c.win[1] = w0;
    c.op = 0;
    cr_assert_eq(l3_coll_start(&x, &c, probe_done, &p), SP_EINVAL);
    cr_assert_eq(atomic_load(&p.calls), 0);
}

/* One collective over `ranks` fake ranks with members placed by
 * `member_rank`: every rank's l3_coll sees only its own members' windows.
 * threaded: each rank starts on its own thread (else one after the other
 * on this one). */
typedef struct l4_rank_job {
    l3_coll c;
    l3_coll_exec x;
    done_probe p;
    int start_rc;
} l4_rank_job;

static void *l4_start(void *arg)
{
    l4_rank_job *j = arg;
    j->start_rc = l3_coll_start(&j->x, &j->c, probe_done, &j->p);
    return NULL;
}

static void run_level4(l3_coll_kind kind, int dtype, int op, uint32_t n, const int *member_rank,
                       int ranks, uint64_t count, uint32_t root, int threaded, uint64_t *seed)
{
    fake_world *w = fake_world_new(ranks);
    fake_rank fr[4];
    l4_rank_job job[4];
    uint8_t *before[8], *after[8], *win[8];
    l3_coll proto;
    memset(&proto, 0, sizeof proto);
    proto.kind = kind;
    proto.dtype = dtype;
    proto.op = op;
    proto.n = n;
    proto.root = root;
    proto.tag = 4242;
    uint64_t wb;
    layout(&proto, count, &wb);
    for (uint32_t m = 0; m < n; m++) {
        before[m] = malloc(wb);
        after[m] = malloc(wb);
        win[m] = malloc(wb);
        fill(before[m], wb / sp_dtype_size(dtype), dtype, seed, 0);
        memcpy(win[m], before[m], wb);
        proto.rank[m] = member_rank[m];
    }
    reference(&proto, before, after);
    /* the group: the ranks holding members, ascending */
    int granks[4], gn = 0;
    for (int r = 0; r < ranks; r++)
        for (uint32_t m = 0; m < n; m++)
            if (member_rank[m] == r) {
                granks[gn++] = r;
                break;
            }
    for (int r = 0; r < ranks; r++) {
        fake_rank_init(&fr[r], w, r);
        memset(&job[r], 0, sizeof job[r]);
        job[r].c = proto;
        job[r].c.my_rank = r;
        job[r].c.transport = &fr[r].t;
        job[r].c.deadline_ns = sp_now_ns() + 10ull * 1000 * 1000 * 1000;
        cr_assert_eq(fr[r].t.group_create(fr[r].t.ctx, granks, (uint32_t)gn, &job[r].c.group), 0);
        for (uint32_t m = 0; m < n; m++)
            job[r].c.win[m] = member_rank[m] == r ? win[m] : NULL;
        job[r].p.status = 1;
    }
    if (threaded) {
        pthread_t th[4];
        for (int r = 0; r < ranks; r++)
            cr_assert_eq(pthread_create(&th[r], NULL, l4_start, &job[r]), 0);
        for (int r = 0; r < ranks; r++)
            pthread_join(th[r], NULL);
    } else {
        /* highest rank first: receives and sends get posted in both orders */
        for (int r = ranks - 1; r >= 0; r--)
            l4_start(&job[r]);
    }
    for (int r = 0; r < ranks; r++) {
        cr_assert_eq(job[r].start_rc, SP_OK, "rank %d: start %d", r, job[r].start_rc);
        wait_probe(&job[r].p);
        cr_assert_eq(atomic_load(&job[r].p.calls), 1, "rank %d: done called %d times", r,
                     atomic_load(&job[r].p.calls));
        cr_assert_eq(job[r].p.status, SP_OK, "rank %d: status %d", r, job[r].p.status);
        l3_coll_exec_release(&job[r].x);
    }
    for (int i = 0; i < FAKE_MAX_OPS; i++)
        cr_assert(!w->ops[i].live, "an operation was left unmatched");
    expect_windows(&proto, win, after, threaded ? "level 4 (threads)" : "level 4");
    for (uint32_t m = 0; m < n; m++) {
        free(before[m]);
        free(after[m]);
        free(win[m]);
    }
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* member -> rank placements: contiguous, one per rank, interleaved, and
 * ranks holding no member at all */
typedef struct placement {
    uint32_t n;
    int ranks;
    int member_rank[8];
} placement;

static const placement placements[] = {
    {1, 2, {1}},
    {2, 2, {0, 1}},
    {3, 2, {0, 1, 1}},
    {4, 2, {0, 0, 1, 1}},
    {4, 2, {1, 0, 0, 1}},
    {4, 4, {0, 1, 2, 3}},
    {3, 4, {3, 0, 2}},
    {4, 3, {2, 2, 0, 1}},
    {6, 3, {0, 1, 2, 0, 1, 2}},
    {5, 2, {0, 0, 0, 1, 1}},
};

static void level4_all(int threaded, uint64_t seed)
{
    const uint64_t l4_counts[] = {1, 3, 8, 33};
    for (size_t pi = 0; pi < sizeof placements / sizeof placements[0]; pi++) {
        const placement *pl = &placements[pi];
        for (int k = L3_COLL_ALLREDUCE; k <= L3_COLL_ALLTOALL; k++)
            for (size_t ci = 0; ci < sizeof l4_counts / sizeof l4_counts[0]; ci++) {
                if (k == L3_COLL_ALLREDUCE || k == L3_COLL_REDUCE_SCATTER) {
                    for (size_t d = 0; d < 3; d++)
                        for (size_t o = 0; o < 2; o++)
                            run_level4((l3_coll_kind)k, red_dtypes[d], red_ops[o], pl->n,
                                       pl->member_rank, pl->ranks, l4_counts[ci], 0, threaded,
                                       &seed);
                } else {
                    for (uint32_t root = 0; root < pl->n; root++)
                        run_level4((l3_coll_kind)k, move_dtypes[root % 5], 0, pl->n,
                                   pl->member_rank, pl->ranks, l4_counts[ci], root, threaded,
                                   &seed);
                }
            }
    }
}

Test(l3_coll_level4, every_kind_dtype_op_and_placement)
{
    level4_all(0, 4321);
}

Test(l3_coll_level4, ranks_on_their_own_threads)
{
    level4_all(1, 8765);
}

Test(l3_coll_level4, larger_blocks)
{
    uint64_t seed = 31;
    const int two[4] = {0, 0, 1, 1}, four[4] = {0, 1, 2, 3};
    for (int k = L3_COLL_ALLREDUCE; k <= L3_COLL_ALLTOALL; k++) {
        int red = k == L3_COLL_ALLREDUCE || k == L3_COLL_REDUCE_SCATTER;
        run_level4((l3_coll_kind)k, red ? SP_DTYPE_F32 : SP_DTYPE_U8, SP_L3_SUM, 4, two, 2, 20011,
                   1, 1, &seed);
        run_level4((l3_coll_kind)k, red ? SP_DTYPE_F16 : SP_DTYPE_I32, SP_L3_MAX, 4, four, 4, 9001,
                   3, 1, &seed);
    }
}

/* A peer that never takes part: this rank's collective completes once, with
 * the transport's SP_ERANK_TIMEOUT naming that peer. A send the transport
 * refuses: that rank completes with the refusal, the peer named, after its
 * other operations. */
Test(l3_coll_level4, failures_complete_once_with_the_first_status_and_peer)
{
    uint64_t seed = 3;
    const int mr[2] = {0, 1};
    for (int k = L3_COLL_ALLGATHER; k <= L3_COLL_ALLTOALL; k++) {
        fake_world *w = fake_world_new(2);
        fake_rank fr;
        fake_rank_init(&fr, w, 0);
        l3_coll c;
        memset(&c, 0, sizeof c);
        c.kind = (l3_coll_kind)k;
        c.dtype = SP_DTYPE_F32;
        c.op = SP_L3_SUM;
        c.n = 2;
        c.root = 1; /* broadcast: rank 0 waits for rank 1's block */
        uint64_t wb;
        layout(&c, 5, &wb);
        uint8_t *w0 = malloc(wb);
        fill(w0, wb / 4, SP_DTYPE_F32, &seed, 0);
        c.win[0] = w0;
        c.rank[0] = mr[0], c.rank[1] = mr[1];
        c.transport = &fr.t;
        c.my_rank = 0;
        c.tag = 7;
        l3_coll_exec x;
        done_probe p = {.status = 1};
        cr_assert_eq(l3_coll_start(&x, &c, probe_done, &p), SP_OK);
        cr_assert_eq(atomic_load(&p.calls), 0, "kind %d finished without its peer", k);
        fake_expire(w, 1);
        wait_probe(&p);
        cr_assert_eq(atomic_load(&p.calls), 1);
        cr_assert_eq(p.status, SP_ERANK_TIMEOUT, "kind %d: status %d", k, p.status);
        cr_assert_eq(p.peer, 1);
        l3_coll_exec_release(&x);
        free(w0);
        free(w);
    }
    /* refused sends: rank 0 cannot send; rank 1 then times out on rank 0 */
    for (int k = L3_COLL_ALLGATHER; k <= L3_COLL_ALLTOALL; k++) {
        if (k == L3_COLL_BROADCAST)
            continue;
        fake_world *w = fake_world_new(2);
        w->refuse_sends_from = 0;
        fake_rank fr[2];
        l4_rank_job job[2];
        uint8_t *win[2];
        for (int r = 0; r < 2; r++) {
            fake_rank_init(&fr[r], w, r);
            memset(&job[r], 0, sizeof job[r]);
            l3_coll *c = &job[r].c;
            c->kind = (l3_coll_kind)k;
            c->dtype = SP_DTYPE_I32;
            c->op = SP_L3_SUM;
            c->n = 2;
            uint64_t wb;
            layout(c, 4, &wb);
            win[r] = calloc(1, wb);
            c->win[r] = win[r];
            c->rank[0] = 0, c->rank[1] = 1;
            c->my_rank = r;
            c->transport = &fr[r].t;
            c->tag = 11;
            job[r].p.status = 1;
        }
        for (int r = 0; r < 2; r++)
            l4_start(&job[r]);
        cr_assert_eq(job[0].start_rc, SP_OK);
        wait_probe(&job[0].p);
        cr_assert_eq(job[0].p.status, SP_ESYS, "kind %d", k);
        cr_assert_eq(job[0].p.peer, 1);
        cr_assert_eq(atomic_load(&job[1].p.calls), 0);
        fake_expire(w, 0);
        wait_probe(&job[1].p);
        cr_assert_eq(job[1].p.status, SP_ERANK_TIMEOUT);
        cr_assert_eq(job[1].p.peer, 0);
        for (int r = 0; r < 2; r++) {
            cr_assert_eq(atomic_load(&job[r].p.calls), 1);
            l3_coll_exec_release(&job[r].x);
            free(win[r]);
        }
        free(w);
    }
}

Test(l3_coll_level4, refuses_remote_members_without_a_group_for_allreduce)
{
    fake_world *w = fake_world_new(2);
    fake_rank fr;
    fake_rank_init(&fr, w, 0);
    l3_coll c = base_coll(L3_COLL_ALLREDUCE, 2);
    uint8_t w0[4096];
    c.win[0] = w0;
    c.rank[1] = 1;
    c.transport = &fr.t;
    l3_coll_exec x;
    done_probe p = {0};
    cr_assert_eq(l3_coll_start(&x, &c, probe_done, &p), SP_EINVAL);
    cr_assert_eq(atomic_load(&p.calls), 0);
    cr_assert_eq(atomic_load(&w->posted), 0);
    free(w);
}

/* Two allreduces of one group in flight at once (posted in the same order
 * on both ranks, as the transport requires): each gets its own result. */
Test(l3_coll_level4, two_allreduces_in_flight)
{
    fake_world *w = fake_world_new(2);
    fake_rank fr[2];
    l4_rank_job job[2][2];
    float win[2][2][8]; /* [rank][collective][element] */
    int granks[2] = {0, 1};
    for (int r = 0; r < 2; r++) {
        fake_rank_init(&fr[r], w, r);
        for (int k = 0; k < 2; k++) {
            memset(&job[r][k], 0, sizeof job[r][k]);
            l3_coll *c = &job[r][k].c;
            c->kind = L3_COLL_ALLREDUCE;
            c->dtype = SP_DTYPE_F32;
            c->op = k ? SP_L3_MAX : SP_L3_SUM;
            c->n = 2;
            c->count = 8;
            c->window_bytes = sizeof win[r][k];
            c->win[r] = (uint8_t *)win[r][k];
            c->rank[0] = 0, c->rank[1] = 1;
            c->my_rank = r;
            c->transport = &fr[r].t;
            c->tag = (uint32_t)(10 + k);
            cr_assert_eq(fr[r].t.group_create(fr[r].t.ctx, granks, 2, &c->group), 0);
            for (int e = 0; e < 8; e++)
                win[r][k][e] = (float)(r * 10 + k * 100 + e);
        }
    }
    /* rank 0 starts both before rank 1 starts either */
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 2; k++)
            l4_start(&job[r][k]);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 2; k++) {
            cr_assert_eq(job[r][k].start_rc, SP_OK);
            wait_probe(&job[r][k].p);
            cr_assert_eq(job[r][k].p.status, SP_OK);
            for (int e = 0; e < 8; e++) {
                float want = k ? (float)(10 + 100 + e) : (float)(0 + 10 + 2 * e);
                cr_assert_eq(win[r][k][e], want, "rank %d allreduce %d [%d] = %g, want %g", r, k, e,
                             (double)win[r][k][e], (double)want);
            }
        }
    free(w);
}
