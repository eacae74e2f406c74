#!/usr/bin/python3
"""The Python layer's fixed cost per run (issue 15), against the C worker on
the same callable, in one process.

  bench/python_overhead.py [--build-dir DIR] [--runtime hbg|tmr|both]
                           [--rounds R] [--runs N] [--big-runs M] [--quick]

One Worker per runtime and two callables built with simpler.build_callable
from bench/python/ (one orchestration, -DBENCH_TASKS=1 and =1000: an empty
1-task graph and a 1000-task graph of independent tiny AIV tasks, each
writing its own 64-byte row of the run's one OUT tensor). Each round runs
N (1-task) or M (1000-task) runs through Worker._c_run_loop (the arguments
converted once, then sp_worker_run timed in C with CLOCK_MONOTONIC: the C
baseline) and N or M through `w.run(callable, (rows,))` (and the same with
the argument named, `w.run(callable, rows=rows)`), timed around each call
with time.perf_counter_ns (the same clock); the order of the loops turns
every round, so load drift hits both alike. Then, each round, N (or M)
*paired* iterations: one run of each path back to back (the C one through
_c_run_loop(..., 1), its order turning per iteration), whose per-iteration
differences Python - C are the paired figure: drift and descheduling
longer than one iteration cancel, so it is the figure to quote on a
loaded machine. Every loop's result is checked (each task marked its row
of the caller's array).

Printed: per graph and path, median and min ns per run; the Python layer's
cost per run = Python - C (median and min, the median of the paired
differences); the per-task difference =
(1000-task difference - 1-task difference) / 999; the load average before
and after, and the two-thread ping-pong round trip (bench/suite/pingpong.c,
as bench/run records it) before and after. Run it on an otherwise idle
machine; quote medians with the ping-pong of the same run.

--quick: a few runs per loop, results checked, timings not looked at (the
ctest python/bench_overhead_quick runs it).
"""
import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = os.path.join(ROOT, "bench", "python")
BIG = 1000  # tasks of the big graph
ROW = 16  # f32 per row: one 64-byte line per task


def log(msg):
    print(msg, flush=True)


def import_simpler(build):
    path = os.path.join(build, "python")
    if not os.path.isdir(os.path.join(path, "simpler")):
        sys.exit(f"python_overhead: {path}/simpler is missing: build first (cmake --build {build})")
    sys.path.insert(0, path)
    import simpler  # noqa: E402 (the build tree's package)
    return simpler


def build_callables(simpler, cache_dir):
    """{tasks: Callable} for the 1-task and the 1000-task graph."""
    out = {}
    for tasks in (1, BIG):
        out[tasks] = simpler.build_callable(
            orchestration=os.path.join(SOURCES, "overhead_orch.c"),
            kernels=[("overhead_touch", "aiv", os.path.join(SOURCES, "overhead_kernel.c"))],
            entry="overhead_orch", config="overhead_config", name="overhead",
            signature=f"rows:out:f32[{tasks},{ROW}]", cflags=(f"-DBENCH_TASKS={tasks}",),
            cache_dir=cache_dir)
    return out


# ---- the ping-pong floor, as bench/run records it ----------------------------

def pingpong_binary(build):
    """bench/run's peer_pingpong if it is built, else one built here."""
    peer = os.path.join(build, "bench", "suite", "peers", "peer_pingpong")
    if os.path.exists(peer):
        return peer
    out_dir = os.path.join(build, "bench", "python")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, "pingpong")
    srcs = [os.path.join(ROOT, "bench", "suite", f) for f in ("pingpong.c", "suite.c")]
    deps = srcs + [os.path.join(ROOT, "bench", "suite", "suite.h")]
    if not os.path.exists(out) or any(os.path.getmtime(d) > os.path.getmtime(out) for d in deps):
        cc = os.environ.get("CC") or shutil.which("cc")
        if not cc:
            return None
        r = subprocess.run([cc, "-O2", "-D_GNU_SOURCE", *srcs, "-o", out, "-lpthread", "-lm"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            log("python_overhead: cannot build the ping-pong: " + r.stdout.strip()[-300:])
            return None
    return out


def pingpong(binary, n):
    """Median round trip (ns) of bench_suite_pingpong's 5 batches, or None."""
    if not binary:
        return None
    r = subprocess.run([binary, "--n", str(n)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       text=True, timeout=120)
    m = re.search(r"^RESULT .* ns=(\d+)", r.stdout, re.M)
    return int(m.group(1)) if r.returncode == 0 and m else None


# ---- the loops -------------------------------------------------------------

def check_rows(rows, tasks, what):
    """Every task marked its row of the caller's array, and only those."""
    if not (rows[:tasks, 0] == 1.0).all():
        bad = int((rows[:tasks, 0] != 1.0).argmax())
        raise SystemExit(f"python_overhead: {what}: row {bad} not written (got {rows[bad, 0]})")


def c_loop(w, c, rows, n):
    rows[:, 0] = 0
    ns = w._c_run_loop(c, (rows,), (), None, n)
    if len(ns) != n:
        raise SystemExit(f"python_overhead: _c_run_loop returned {len(ns)} times, want {n}")
    return list(ns)


def py_loop(w, c, rows, n):
    rows[:, 0] = 0
    clock, run, tensors = time.perf_counter_ns, w.run, (rows,)
    ns = [0] * n
    for i in range(n):
        t0 = clock()
        run(c, tensors)
        ns[i] = clock() - t0
    return ns


def py_named_loop(w, c, rows, n):
    rows[:, 0] = 0
    clock, run = time.perf_counter_ns, w.run
    ns = [0] * n
    for i in range(n):
        t0 = clock()
        run(c, rows=rows)
        ns[i] = clock() - t0
    return ns


PATHS = (("C", c_loop), ("Python", py_loop), ("Python named", py_named_loop))


def paired_loop(w, c, rows, n):
    """n iterations of one run per path, back to back, the order turning:
    {path: [this path's ns - the C run's ns of the same iteration]}."""
    rows[:, 0] = 0
    clock, run, tensors, c_run = time.perf_counter_ns, w.run, (rows,), w._c_run_loop
    out = {name: [0] * n for name, _ in PATHS[1:]}
    pos, named = out["Python"], out["Python named"]
    for i in range(n):
        k = i % 3
        if k == 0:
            cns = c_run(c, tensors, (), None, 1)[0]
        t0 = clock()
        run(c, tensors)
        t1 = clock()
        if k == 1:
            cns = c_run(c, tensors, (), None, 1)[0]
        t2 = clock()
        run(c, rows=rows)
        t3 = clock()
        if k == 2:
            cns = c_run(c, tensors, (), None, 1)[0]
        pos[i], named[i] = t1 - t0 - cns, t3 - t2 - cns
    return out


def timer_cost(n=100000):
    """Median ns between two back-to-back perf_counter_ns calls (part of
    every Python sample)."""
    clock = time.perf_counter_ns
    v = []
    for _ in range(n):
        t0 = clock()
        v.append(clock() - t0)
    return statistics.median(v)


class Samples:
    """One (graph, path)'s figures: every run's wall ns, each round's
    median, and each block's calling-thread CPU ns per run (descheduling
    does not count there, so it is the steadier figure on a loaded
    machine; waiting for the chip counts the same on both paths)."""

    def __init__(self):
        self.wall, self.round_median, self.cpu = [], [], []
        self.paired = []  # this path - C, one iteration each (empty for C)


def measure(simpler, np, runtime, callables, rounds, runs, quick):
    """{(tasks, path): Samples} over every round."""
    samples = {}
    cpu = time.thread_time_ns
    with simpler.Worker(runtime=runtime) as w:
        bufs = {t: np.zeros((t, ROW), dtype=np.float32) for t in callables}
        for t, c in callables.items():
            w.register(c)
            for _, fn in PATHS:  # warm-up: first-use registration, caches, pages
                fn(w, c, bufs[t], 3)
                check_rows(bufs[t], t, f"{runtime} warm-up")
        for r in range(rounds):
            order = PATHS if r % 2 == 0 else PATHS[::-1]
            for t, c in callables.items():
                for name, fn in order:
                    c0 = cpu()
                    ns = fn(w, c, bufs[t], runs[t])
                    c1 = cpu()
                    check_rows(bufs[t], t, f"{runtime} {t}-task {name} round {r + 1}")
                    s = samples.setdefault((t, name), Samples())
                    s.wall.extend(ns)
                    s.round_median.append(statistics.median(ns))
                    s.cpu.append((c1 - c0) / runs[t])
                for name, d in paired_loop(w, c, bufs[t], runs[t]).items():
                    samples[(t, name)].paired.extend(d)
                check_rows(bufs[t], t, f"{runtime} {t}-task paired round {r + 1}")
            if not quick:
                log(f"  {runtime}: round {r + 1}/{rounds} done")
    return samples


# ---- the table -------------------------------------------------------------

HEADER = ("| runtime | graph | path | runs | wall median µs | wall min µs | Python - C: median "
          "µs | min µs | per-round median µs | paired median µs | thread CPU µs/run | "
          "Python - C CPU µs |\n"
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def table(runtime, samples):
    """(table rows, {(tasks, path): differences}, per-task lines)."""
    lines, diffs = [], {}
    for t in sorted({k[0] for k in samples}):
        c = samples[(t, "C")]
        c_med, c_min, c_cpu = statistics.median(c.wall), min(c.wall), statistics.median(c.cpu)
        for name, _ in PATHS:
            s = samples[(t, name)]
            med, lo, cpu = statistics.median(s.wall), min(s.wall), statistics.median(s.cpu)
            if name == "C":
                d = ["", "", "", "", ""]
            else:
                per_round = statistics.median(p - q for p, q in zip(s.round_median,
                                                                     c.round_median))
                paired = statistics.median(s.paired)
                diffs[(t, name)] = dict(median=med - c_med, min=lo - c_min, round=per_round,
                                        paired=paired, cpu=cpu - c_cpu)
                d = [f"**{(med - c_med) / 1000:+.2f}**", f"{(lo - c_min) / 1000:+.2f}",
                     f"{per_round / 1000:+.2f}", f"**{paired / 1000:+.2f}**",
                     f"**{(cpu - c_cpu) / 1000:+.2f}**"]
            graph = "empty, 1 task" if t == 1 else f"{t} tasks"
            lines.append(f"| {runtime} | {graph} | {name} | {len(s.wall)} | {us(med)} | {us(lo)} | "
                         f"{d[0]} | {d[1]} | {d[2]} | {d[3]} | {us(cpu)} | {d[4]} |")
    per_task = []
    for name, _ in PATHS[1:]:
        if (1, name) in diffs and (BIG, name) in diffs:
            big, one = diffs[(BIG, name)], diffs[(1, name)]
            f = {k: (big[k] - one[k]) / (BIG - 1) for k in big}
            per_task.append(f"{runtime} {name}: per task ((1000-task diff - 1-task diff) / 999): "
                            f"wall median {f['median']:+.2f} ns, min {f['min']:+.2f} ns, "
                            f"per-round {f['round']:+.2f} ns, paired {f['paired']:+.2f} ns, "
                            f"thread CPU {f['cpu']:+.2f} ns")
    return lines, diffs, per_task


def us(ns):
    return f"{ns / 1000:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runtime", default="both", choices=("hbg", "tmr", "both"))
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--runs", type=int, default=None, help="1-task runs per loop")
    ap.add_argument("--big-runs", type=int, default=None, help="1000-task runs per loop")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    build = os.path.abspath(a.build_dir)
    simpler = import_simpler(build)
    import numpy as np

    rounds = a.rounds or (2 if a.quick else 10)
    runs = {1: a.runs or (5 if a.quick else 500), BIG: a.big_runs or (2 if a.quick else 50)}
    runtimes = ("hbg", "tmr") if a.runtime == "both" else (a.runtime,)
    cache = os.environ.get("SIMPLER_CACHE_DIR") or os.path.join(build, "bench", "python", "cache")
    callables = build_callables(simpler, cache)
    pp_bin = None if a.quick else pingpong_binary(build)

    started = datetime.datetime.now(datetime.timezone.utc)
    load_before = os.getloadavg()
    pp_before = pingpong(pp_bin, 100000)
    tc = timer_cost()
    log(f"python_overhead: simpler {simpler.__version__}, {started:%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} CPUs, load average {load_before[0]:.2f}, ping-pong "
        f"{pp_before if pp_before is not None else '-'} ns, perf_counter_ns pair {tc:.0f} ns")
    log(f"  {rounds} rounds x ({runs[1]} 1-task + {runs[BIG]} {BIG}-task runs) per path, "
        f"paths {', '.join(p for p, _ in PATHS)}, runtimes {', '.join(runtimes)}")
    results = {}
    for rt in runtimes:
        results[rt] = measure(simpler, np, rt, callables, rounds, runs, a.quick)
    load_after = os.getloadavg()
    pp_after = pingpong(pp_bin, 100000)

    if a.quick:
        n = sum(len(v.wall) for s in results.values() for v in s.values())
        log(f"python_overhead --quick: {n} runs, every result correct (timings not looked at)")
        return 0
    print()
    print(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; ping-pong "
          f"round trip {pp_before if pp_before is not None else '-'} ns before, "
          f"{pp_after if pp_after is not None else '-'} ns after; a perf_counter_ns pair "
          f"{tc:.0f} ns (inside every Python sample)")
    print()
    print(HEADER)
    notes = []
    for rt in runtimes:
        rows, _, per_task = table(rt, results[rt])
        print("\n".join(rows))
        notes += per_task
    print()
    for n in notes:
        print(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
