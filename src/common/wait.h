/* Spin, then yield, then park: the one way anything in simpler waits.
 * A sp__waitword is a 32-bit value plus a count of parked waiters; a writer
 * pays for a futex wake only while somebody is actually parked, so the busy
 * path stays on plain cache-line traffic and an idle waiter costs no CPU. */
#ifndef SP_COMMON_WAIT_H
#define SP_COMMON_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SP_CACHE_LINE 64

typedef struct sp__waitword {
    _Atomic uint32_t value;
    _Atomic uint32_t parked; /* waiters that may be asleep on value; each takes itself out */
} sp__waitword;

/* The protocol's steps SP_WAIT_STEP names (tests/common/test_wait_lost_wakeup.c). */
enum { SP_WAIT_STEP_WAKE = 1, SP_WAIT_STEP_SLEEP = 2 };

/* How long a waiter stays on each rung before the next. */
typedef struct sp__wait_policy {
    uint32_t spin_ns;  /* busy-poll with a pause instruction */
    uint32_t yield_ns; /* poll with sched_yield between looks */
    /* Optional (NULL: always spin): a count of the threads of one group that
     * are not parked, kept by the waits themselves, and the CPUs the group
     * has. A waiter spins only while the awake threads fit on those CPUs:
     * beyond that a spinner only keeps the thread it waits for off a CPU. */
    _Atomic uint32_t *awake;
    uint32_t cpus;
    bool counted; /* the waiter is one of the threads `awake` counts */
    /* Park after SP_WAIT_LONELY_YIELDS yields in a row that came straight
     * back while the group is crowded (sp__wait_lonely_park): for a waiter
     * that nothing needs soon (a scheduler whose cores all have work
     * queued), not for one on a handoff's critical path, whose wake-up
     * would cost more than the CPU it frees. */
    bool park_when_lonely;
} sp__wait_policy;

/* What one waiter (or a group of waiters on the same handoff) learned from
 * its recent waits, so the rungs follow the machine instead of a constant
 * (issue 18): an adaptive mutex's spin, and a yield that is skipped while
 * yielding hands the CPU away for a whole time slice. Fields are relaxed
 * atomics because a group (the scheduler threads of a chip) may share one:
 * they are hints, and a lost update costs one wait's tuning. Initialise
 * with sp__wait_adapt_init (zeroed memory starts at the spin floor). */
typedef struct sp__wait_adapt {
    /* Spin budget in ns, kept within [SP_WAIT_SPIN_FLOOR_NS, policy spin_ns]:
     * a quarter of the way towards the policy's spin after a wait the spin
     * caught, towards twice a wait's length after one that outlasted the
     * budget but not the policy's spin, and towards the floor after a
     * longer one (the thread waited for was off its CPU: spinning only
     * takes a CPU from it or from whoever runs). */
    _Atomic uint32_t spin_ns;
    /* Waits left that skip the yield rung (spin, then park at once), and
     * how many the next skip lasts: a sched_yield that came back after
     * SP_WAIT_YIELD_SLOW_NS gave the CPU to a thread that kept it for a
     * time slice (another process's, when the machine is loaded), and a
     * parked thread is woken back onto a CPU sooner than a yielded one
     * gets it back. The skip doubles while yields stay slow. */
    _Atomic uint32_t skip_yield;
    _Atomic uint32_t backoff;
} sp__wait_adapt;

/* The spin budget's floor (a few looks at the word), a yield that counts as
 * slow, and the first and longest yield skips, in waits. */
#define SP_WAIT_SPIN_FLOOR_NS 200u
#define SP_WAIT_YIELD_SLOW_NS 50000u
#define SP_WAIT_SKIP_FIRST 16u
/* A yield shorter than this handed the CPU to nobody; this many in a row,
 * while the group's awake threads outnumber its CPUs, end the yield rung
 * of a policy with park_when_lonely. */
#define SP_WAIT_YIELD_LONELY_NS 1500u
#define SP_WAIT_LONELY_YIELDS 16u
#define SP_WAIT_SKIP_MAX 1024u

/* How a wait ended, for sp__wait_adapt_note. */
typedef enum sp__wait_end {
    SP_WAIT_END_SPIN = 0, /* the value changed while spinning */
    SP_WAIT_END_YIELD,    /* while yielding, every yield quick */
    SP_WAIT_END_PARK,     /* after parking (or a timeout) */
} sp__wait_end;

/* The lonely-yield rule: the count of yields in a row that came straight
 * back, after one that took `yield_ns`; and whether that count ends the
 * yield rung (only while the group is crowded). Exposed for its tests. */
static inline uint32_t sp__wait_lonely_count(uint32_t lonely, uint64_t yield_ns)
{
    return yield_ns < SP_WAIT_YIELD_LONELY_NS ? lonely + 1 : 0;
}
static inline bool sp__wait_lonely_park(uint32_t lonely, bool crowded)
{
    return crowded && lonely >= SP_WAIT_LONELY_YIELDS;
}

/* Start `a` at the policy's rungs. */
void sp__wait_adapt_init(sp__wait_adapt *a, const sp__wait_policy *policy);
/* Learn from one wait of `waited_ns` (unused when it ended in the spin)
 * that ended as `end`, `slow_yield` if one of its yields was slow. Exposed for the tests of the
 * rule; the adaptive wait calls it itself. */
void sp__wait_adapt_note(sp__wait_adapt *a, const sp__wait_policy *policy, sp__wait_end end,
                         uint64_t waited_ns, bool slow_yield);

/* Default: ~20 us spinning, ~200 us yielding, then park. */
extern const sp__wait_policy sp__wait_default;

static inline void sp__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Monotonic clock in nanoseconds (the one clock for host and chip). */
uint64_t sp_now_ns(void);

static inline uint32_t sp__waitword_load(sp__waitword *w)
{
    return atomic_load_explicit(&w->value, memory_order_acquire);
}

/* Store `v` (seq_cst, so also release) and wake every parked waiter. */
void sp__waitword_store(sp__waitword *w, uint32_t v);
/* Add `d` (seq_cst), wake every parked waiter; returns the old value. */
uint32_t sp__waitword_add(sp__waitword *w, uint32_t d);

/* Add `d` (seq_cst) without waking anybody: for a writer that knows no
 * parked waiter needs this change; pair with sp__waitword_wake if it may. */
static inline uint32_t sp__waitword_add_quiet(sp__waitword *w, uint32_t d)
{
    return atomic_fetch_add_explicit(&w->value, d, memory_order_seq_cst);
}
/* Wake every parked waiter (a look at the parked flag, a syscall only if
 * somebody is parked). */
void sp__waitword_wake(sp__waitword *w);

/* Wait until the value differs from `old`; returns the new value (acquire).
 * `deadline_ns` is an sp_now_ns() time, 0 for none. On timeout returns `old`
 * and sets *timed_out (if given) to 1. */
uint32_t sp__waitword_wait_ne(sp__waitword *w, uint32_t old, const sp__wait_policy *policy,
                              uint64_t deadline_ns, int *timed_out);
/* The same, raising the counter *park_flag (seq_cst) while parked: for
 * writers that use sp__waitword_add_quiet and wake only when it is non-zero
 * (or for reasons of their own). It goes up before the word's parked count
 * and the last look at the value, so a writer that adds, then reads the flag, cannot miss a
 * waiter that needs it. */
uint32_t sp__waitword_wait_ne_flagged(sp__waitword *w, uint32_t old, const sp__wait_policy *policy,
                                      uint64_t deadline_ns, int *timed_out,
                                      _Atomic uint32_t *park_flag);

/* The same again, with the rungs adapted by `adapt` (NULL: the policy's
 * fixed rungs) and `park_flag` as in sp__waitword_wait_ne_flagged (NULL:
 * none). The waits of a handoff between threads use it: one waiter's
 * history tells whether its partner is usually on a CPU. An idle waiter
 * still parks: only the spin and the yield adapt. */
uint32_t sp__waitword_wait_adaptive(sp__waitword *w, uint32_t old, const sp__wait_policy *policy,
                                    sp__wait_adapt *adapt, uint64_t deadline_ns, int *timed_out,
                                    _Atomic uint32_t *park_flag);

#endif
