#!/usr/bin/env python3
"""Allocation-failure sweep (docs/RELIABILITY.md "Allocation failures").

Runs each target once under tests/support/oom_shim.c to count its
allocations (C), then again with the Nth allocation failed (mode "once"), or
the Nth and every later one (mode "after"), for N = 1, 1+s,
1+2s, ... up to C (s, the stride, is 1 unless C exceeds --max-per-target),
then N = C+1, C+2, ... until a run sees no injected failure. Every run must
end in a pass (exit 0 with the target's pass line) or a named status (a
non-zero exit with an "SP_E..." name in its output); a signal, a hang past
--timeout, a non-zero exit with no status name, or exit 0 without the pass
line is a finding and fails the sweep.

One class is counted apart: glibc's "cannot allocate memory for thread-local
data" (it ends the process with exit 127 when a thread's first touch of a
module's __thread variable cannot get memory). It fails the sweep only with
--strict-tls, until the crash guard keeps no thread-locals in the module.

usage: oom_sweep.py --shim SHIM.so --simpler BIN --quickstart BIN
                    --quickstart-callable SPC --module-dir DIR [options]
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

TLS_TEXT = "cannot allocate memory for thread-local data"
STATUS_RE = re.compile(r"\bSP_E[A-Z0-9_]+\b")
INJECT_RE = re.compile(r"sp_oom_shim: injected failure of call (\d+) \((\w+) (\d+) B\) from (\S+)")


def targets(a):
    if a.cmd:  # by hand: sweep other commands (pass line: --pass-regex)
        return [(c, shlex.split(c), re.compile(a.pass_regex, re.M)) for c in a.cmd]
    out = []
    for rt in ("hbg", "tmr"):
        out.append((f"simpler run vector_example --runtime {rt}",
                    [a.simpler, "run", "vector_example", "--runtime", rt],
                    re.compile(r"^PASS vector_example", re.M)))
    # The quickstart opens its runtime by name: the worker finds the module
    # beside the libsimpler.so it links (docs/quickstart/main.c).
    for rt in ("hbg", "tmr"):
        out.append((f"quickstart ({rt})", [a.quickstart, a.quickstart_callable, rt],
                    re.compile(r"z = 2\*x \+ y: PASS")))
    return out


def run_one(a, cmd, n, mode, report):
    env = dict(os.environ)
    env["LD_PRELOAD"] = a.shim
    env["SP_OOM_FAIL"] = str(n)
    env["SP_OOM_MODE"] = mode
    if report:
        env["SP_OOM_REPORT"] = report
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=a.timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), False
    except subprocess.TimeoutExpired as e:
        text = (e.stdout or b"").decode("utf-8", "replace")
        return None, text, True


def classify(rc, text, hung, pass_re):
    """-> (class, injected-line or None)"""
    m = INJECT_RE.search(text)
    inj = m.group(0) if m else None
    if hung:
        return "hang", inj
    if rc < 0:
        return "crash", inj
    if TLS_TEXT in text:
        return "tls", inj
    if rc == 0:
        return ("pass" if pass_re.search(text) else "silent"), inj
    if STATUS_RE.search(text):
        return "named", inj
    return "unnamed", inj


def describe(rc, hung):
    if hung:
        return "timed out"
    if rc is not None and rc < 0:
        return f"killed by signal {-rc}"
    return f"exit {rc}"


def resolve(site):
    """object+0xoff -> 'function file:line' with addr2line, when it is there."""
    m = re.match(r"(.+)\+0x([0-9a-f]+)$", site or "")
    tool = shutil.which("addr2line")
    if not m or not tool:
        return ""
    # the return address is one past the call
    off = max(int(m.group(2), 16) - 1, 0)
    try:
        p = subprocess.run([tool, "-f", "-C", "-s", "-e", m.group(1), hex(off)],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=20)
        return " ".join(p.stdout.decode().split())
    except (OSError, subprocess.SubprocessError):
        return ""


def sweep(a, name, cmd, pass_re, mode, pool, tmp):
    report = os.path.join(tmp, "count")
    rc, text, hung = run_one(a, cmd, 0, mode, report)
    cls, _ = classify(rc, text, hung, pass_re)
    if cls != "pass":
        print(f"{name}: the run without injection did not pass ({describe(rc, hung)}):\n{text}")
        return {"baseline": 1}, [], 0, 0
    with open(report) as f:
        count = int(re.search(r"calls=(\d+)", f.read()).group(1))
    stride = max(1, -(-count // a.max_per_target)) if a.stride == 0 else a.stride
    ns = list(range(1 + a.offset % stride, count + 1, stride))
    tally, findings = {}, []

    def record(n, res):
        rc, text, hung = res
        cls, inj = classify(rc, text, hung, pass_re)
        tally[cls] = tally.get(cls, 0) + 1
        if cls not in ("pass", "named"):
            findings.append((cls, n, describe(rc, hung), inj, text))
        return inj

    for n, res in zip(ns, pool.map(lambda n: run_one(a, cmd, n, mode, None), ns)):
        record(n, res)
    # Past the count: threads make the count vary a little from run to run;
    # stop at the first run that no failure reached (the sweep's end).
    n = count + 1
    while n <= count + a.tail:
        if record(n, run_one(a, cmd, n, mode, None)) is None:
            break
        n += 1
    else:
        print(f"{name}: still injecting {a.tail} calls past the counted {count}")
        tally["endless"] = 1
    return tally, findings, count, stride


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shim", required=True)
    ap.add_argument("--simpler", required=True)
    ap.add_argument("--quickstart", required=True)
    ap.add_argument("--quickstart-callable", required=True)
    ap.add_argument("--module-dir", help="unused (kept for old command lines): the quickstart "
                    "finds its module beside libsimpler")
    ap.add_argument("--modes", default="once,after",
                    help="once: fail only call N; after: call N and every later one "
                         "(default: both, one sweep each)")
    ap.add_argument("--max-per-target", type=int, default=400,
                    help="runs per target before a stride is used (default 400)")
    ap.add_argument("--stride", type=int, default=0, help="fixed stride (1: every call)")
    ap.add_argument("--offset", type=int, default=0, help="first N is 1 + offset %% stride")
    ap.add_argument("--tail", type=int, default=200, help="calls past the count to try")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per child")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", help="run only the targets whose name contains this")
    ap.add_argument("--cmd", action="append",
                    help="sweep this command line instead of the default targets (repeatable)")
    ap.add_argument("--pass-regex", default=r"^PASS ", help="the pass line of --cmd")
    ap.add_argument("--strict-tls", action="store_true",
                    help="fail on glibc's thread-local-data abort too")
    a = ap.parse_args()
    if os.environ.get("SP_OOM_STRICT_TLS") == "1":
        a.strict_tls = True

    strict = {"crash", "hang", "unnamed", "silent", "baseline", "endless"}
    if a.strict_tls:
        strict.add("tls")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp, \
            concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for (name, cmd, pass_re), mode in ((t, m) for m in a.modes.split(",")
                                           for t in targets(a)):
            if a.only and a.only not in name:
                continue
            name = f"{name} [{mode}]"
            tally, findings, count, stride = sweep(a, name, cmd, pass_re, mode, pool, tmp)
            runs = sum(tally.values())
            parts = " ".join(f"{k}={v}" for k, v in sorted(tally.items()))
            print(f"{name}: {count} allocations, stride {stride}, {runs} runs: {parts}")
            tls_ns = [str(f[1]) for f in findings if f[0] == "tls"]
            if tls_ns and not a.strict_tls:  # counted apart: one line, the Ns
                findings = [f for f in findings if f[0] != "tls"]
                print(f"  thread-local-data exits ({len(tls_ns)}, not failed without "
                      f"--strict-tls) at N={','.join(tls_ns)}")
            for cls, n, how, inj, text in findings:
                site = INJECT_RE.search(inj).group(4) if inj else ""
                where = resolve(site)
                tail = "\n    ".join(text.strip().splitlines()[-4:])
                print(f"  {cls.upper()} at N={n} ({how}): {inj or 'no injection seen'}"
                      f"{' [' + where + ']' if where else ''}\n    {tail}")
            bad += sum(v for k, v in tally.items() if k in strict)
    print("oom sweep:", "FAIL" if bad else "PASS", f"({bad} findings that fail it)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
