/* Dependencies of the L3 layer against a sequential reference: random L3
 * programs (chip tasks on random chips over random byte-range views, with
 * strides, of a few buffers on random chips and the host; IN, OUT and
 * INOUT accesses; copies between them) run by sp_l3_run_orch, and the
 * same program executed in order in plain C; every buffer must end equal.
 * A missing RAW, WAR or WAW edge, or a wrong inserted copy, lets some
 * task see or clobber the wrong values. */
#include "l3_test_support.h"

#define NBUF 4
#define LEN 48
#define OPS 48

static sp_l3 *l3;

static void teardown(void)
{
    sp_l3_close(l3);
    l3 = NULL;
}

TestSuite(l3_deps, .fini = teardown, .timeout = 240);

enum { OP_AXPY, OP_FILL, OP_COPY };

typedef struct op {
    int kind, chip;
    int sb, db;                    /* buffers */
    int64_t ss, ds, len, sst, dst; /* starts, length, strides */
    uint64_t a;
} op;

typedef struct prog {
    int chips;
    sp_l3_tensor buf[NBUF];
    int where[NBUF];
    uint64_t host[NBUF][LEN];
    uint64_t ref[NBUF][LEN];
    op ops[OPS];
    int nops;
} prog;

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* A view of `len` elements with stride `st` from `start` of buffer b. */
static sp_l3_tensor view(const prog *p, int b, int64_t start, int64_t len, int64_t st)
{
    sp_l3_tensor t = p->buf[b];
    t.view.offset = start;
    t.view.shape[0] = len;
    t.view.strides[0] = st;
    return t;
}

static bool overlap(int64_t a0, int64_t alen, int64_t ast, int64_t b0, int64_t blen, int64_t bst)
{
    int64_t a1 = a0 + (alen - 1) * ast + 1, b1 = b0 + (blen - 1) * bst + 1;
    return a0 < b1 && b0 < a1;
}

static void make_prog(prog *p, uint64_t seed)
{
    uint64_t s = seed;
    p->nops = OPS;
    for (int i = 0; i < OPS; i++) {
        op *o = &p->ops[i];
        uint64_t k = rnd(&s) % 10;
        o->kind = k < 6 ? OP_AXPY : k < 8 ? OP_FILL : OP_COPY;
        o->chip = (int)(rnd(&s) % (uint64_t)p->chips);
        o->a = 1 + rnd(&s) % 3;
        for (;;) {
            o->len = 1 + (int64_t)(rnd(&s) % 12);
            o->sst = o->kind == OP_COPY ? 1 : 1 + (int64_t)(rnd(&s) % 2);
            o->dst = o->kind == OP_COPY ? 1 : 1 + (int64_t)(rnd(&s) % 2);
            o->sb = (int)(rnd(&s) % NBUF);
            o->db = (int)(rnd(&s) % NBUF);
            int64_t sspan = (o->len - 1) * o->sst + 1, dspan = (o->len - 1) * o->dst + 1;
            o->ss = (int64_t)(rnd(&s) % (uint64_t)(LEN - sspan + 1));
            o->ds = (int64_t)(rnd(&s) % (uint64_t)(LEN - dspan + 1));
            if (o->kind == OP_FILL || o->sb != o->db ||
                !overlap(o->ss, o->len, o->sst, o->ds, o->len, o->dst))
                break;
        }
    }
}

static void reference(prog *p)
{
    for (int i = 0; i < p->nops; i++) {
        const op *o = &p->ops[i];
        uint64_t *d = p->ref[o->db], *sv = p->ref[o->sb];
        for (int64_t j = 0; j < o->len; j++) {
            uint64_t *dj = &d[o->ds + j * o->dst];
            if (o->kind == OP_FILL)
                *dj = o->a * 1000u + (uint64_t)j;
            else if (o->kind == OP_AXPY)
                *dj = *dj * o->a + sv[o->ss + j * o->sst];
            else
                *dj = sv[o->ss + j * o->sst];
        }
    }
}

static int prog_orch(sp_l3_run *r, void *user)
{
    prog *p = user;
    for (int i = 0; i < p->nops; i++) {
        const op *o = &p->ops[i];
        sp_l3_tensor d = view(p, o->db, o->ds, o->len, o->dst);
        sp_l3_tensor s = view(p, o->sb, o->ss, o->len, o->sst);
        int64_t rc = o->kind == OP_FILL   ? l3t_fill(r, o->chip, &d, o->a * 1000u)
                     : o->kind == OP_AXPY ? l3t_axpy(r, o->chip, &s, &d, o->a)
                                          : sp_l3_copy(r, &d, &s);
        if (rc < 0)
            return (int)rc;
    }
    return 0;
}

static void random_programs(int chips, const char *rt, int count, uint64_t seed0)
{
    l3 = l3t_open((uint32_t)chips, rt, 0, 0);
    prog *p = calloc(1, sizeof *p);
    p->chips = chips;
    uint64_t s = seed0;
    for (int b = 0; b < NBUF; b++) {
        /* One buffer in host memory, the others on chips. */
        int64_t n = LEN;
        p->where[b] = b == NBUF - 1 ? SP_L3_HOST : (int)(rnd(&s) % (uint64_t)chips);
        if (p->where[b] == SP_L3_HOST)
            cr_assert_eq(sp_l3_tensor_host(l3, p->host[b], SP_DTYPE_U64, 1, &n, &p->buf[b]), SP_OK);
        else
            p->buf[b] = l3t_vec(l3, p->where[b], LEN);
    }
    for (int prg = 0; prg < count; prg++) {
        uint64_t seed = seed0 * 1000u + (uint64_t)prg;
        for (int b = 0; b < NBUF; b++) {
            uint64_t init[LEN];
            for (int i = 0; i < LEN; i++)
                init[i] = rnd(&s) % 100;
            memcpy(p->ref[b], init, sizeof init);
            cr_assert_eq(sp_l3_write(l3, &p->buf[b], init, sizeof init), SP_OK, "%s",
                         sp_l3_last_error(l3));
        }
        make_prog(p, seed);
        reference(p);
        sp_l3_stats st;
        int rc = sp_l3_run_orch(l3, prog_orch, p, &st);
        cr_assert_eq(rc, SP_OK, "program %d (seed %llu): %s", prg, (unsigned long long)seed,
                     sp_l3_last_error(l3));
        cr_assert_eq(st.cancelled, 0);
        for (int b = 0; b < NBUF; b++) {
            uint64_t got[LEN];
            cr_assert_eq(sp_l3_read(l3, &p->buf[b], got, sizeof got), SP_OK);
            for (int i = 0; i < LEN; i++)
                cr_assert_eq(got[i], p->ref[b][i],
                             "%d chips %s, program %d (seed %llu): buffer %d (chip %d)[%d] = %llu, "
                             "reference %llu",
                             chips, rt, prg, (unsigned long long)seed, b, p->where[b], i,
                             (unsigned long long)got[i], (unsigned long long)p->ref[b][i]);
        }
    }
    free(p);
}

Test(l3_deps, random_2_chips_hbg)
{
    random_programs(2, "hbg", 25, 1);
}

Test(l3_deps, random_4_chips_tmr)
{
    random_programs(4, "tmr", 25, 2);
}

Test(l3_deps, random_3_chips_hbg)
{
    random_programs(3, "hbg", 25, 3);
}
