#!/usr/bin/env python3
"""SIMPLER_TRACE makes any program that uses the worker write a trace of each
run it waits for, without a code change (ctest trace/env_files).

An unmodified host program (the quickstart, linked to libsimpler.so) and the
`simpler` CLI are run with SIMPLER_TRACE set, on both runtimes, and every
file is checked: the Chrome-trace JSON parses, has one task event per task
named by its kernel (one per block a core ran), a flow per edge, queued slices that end where their
block starts, the critical path marked (args.critical, flows of category
"critical" linking consecutive critical tasks); the SVG is well-formed with
a bar per block, scheduler and core lanes (tmr: an orchestrator lane); the
DOT has a rank per depth and an edge per dependency; the stats lines are
there; "%n" numbers the files; a path that cannot be written is a warning
on stderr and the run still passes.

usage: check_trace_env.py --quickstart BIN --callable SPC --module-dir DIR
                          --simpler BIN --work DIR
"""
import argparse
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, trace, expect_rc=0):
    env = dict(os.environ, SIMPLER_TRACE=trace)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    if p.returncode != expect_rc:
        fail("%s (SIMPLER_TRACE=%s) exited %d:\n%s%s" % (" ".join(cmd), trace, p.returncode,
                                                        p.stdout, p.stderr))
    return p


def check_json(path, tasks, edges, kernels):
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X" and e.get("cat") == "task"]
    if sorted({e["args"]["task"] for e in slices}) != list(range(tasks)):
        fail("%s: not an event for every task (%d tasks)" % (path, tasks))
    names = {e["name"] for e in slices}
    if kernels is not None and not names <= kernels:
        fail("%s: task names %s are not the callable's kernels %s" % (path, names, kernels))
    if any(re.fullmatch(r"f\d+", n) for n in names):
        fail("%s: kernels unnamed: %s" % (path, names))
    tracks = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in ev:
        if e["ph"] == "X" and (e["pid"], e["tid"]) not in tracks:
            fail("%s: event %s on an unnamed track" % (path, e["name"]))
    by_block = {(e["args"]["task"], e["args"]["block"], e["args"]["core"]): e for e in slices}
    queued = [e for e in ev if e["ph"] == "X" and e.get("cat") == "queued"]
    if not queued:
        fail("%s: no queued slices" % path)
    for q in queued:
        t = by_block[(q["args"]["task"], q["args"]["block"], q["args"]["core"])]["args"]
        if abs(q["ts"] - t["dispatch_us"]) > 2e-3 or abs(q["ts"] + q["dur"] - t["start_us"]) > 2e-3:
            fail("%s: queued slice %s does not span dispatch..start of %s" % (path, q, t))
    # Queued slices on one track never overlap (Perfetto needs them nested).
    rows = {}
    for q in queued:
        rows.setdefault((q["pid"], q["tid"]), []).append((q["ts"], q["ts"] + q["dur"]))
    for key, spans in rows.items():
        spans.sort()
        for a, b in zip(spans, spans[1:]):
            if b[0] + 1e-3 < a[1]:
                fail("%s: queued slices overlap on track %s: %s %s" % (path, key, a, b))
    starts = [e for e in ev if e["ph"] == "s"]
    if len(starts) != edges or len([e for e in ev if e["ph"] == "f"]) != edges:
        fail("%s: %d flow starts, want %d" % (path, len(starts), edges))
    crit = {e["args"]["task"] for e in slices if e["args"]["critical"]}
    for e in slices:  # a task is critical in all its blocks or in none
        if e["args"]["critical"] != (e["args"]["task"] in crit):
            fail("%s: task %d marked critical in some blocks only" % (path, e["args"]["task"]))
    if not crit:
        fail("%s: no task on the critical path" % path)
    crit_flows = [e for e in starts if e["cat"] == "critical"]
    if len(crit_flows) != len(crit) - 1:
        fail("%s: %d critical flows for %d critical tasks" % (path, len(crit_flows), len(crit)))
    if doc["otherData"]["critical_path_tasks"] != len(crit):
        fail("%s: otherData.critical_path_tasks %s, %d marked" %
             (path, doc["otherData"]["critical_path_tasks"], len(crit)))
    return len(slices)


def check_svg(path, slices, tmr):
    root = ET.parse(path).getroot()
    bars = [r for r in root.iter(SVG + "rect") if r.get("class", "").startswith("task")]
    if len(bars) != slices:
        fail("%s: %d task bars, want one per block a core ran (%d)" % (path, len(bars), slices))
    if not any("critical" in r.get("class") for r in bars):
        fail("%s: no critical bar" % path)
    labels = [t.text for t in root.iter(SVG + "text")]
    if not any(l and l.startswith("scheduler ") for l in labels):
        fail("%s: no scheduler lane: %s" % (path, labels))
    if not any(l == "cluster 0 AIC" for l in labels):
        fail("%s: no core lanes" % path)
    if tmr != any(l == "orchestrator" for l in labels):
        fail("%s: orchestrator lane %s on %s" % (path, not tmr, "tmr" if tmr else "hbg"))
    if not [g for g in root.iter(SVG + "g") if g.get("class") == "queued"]:
        fail("%s: no queued strip" % path)


def check_dot(path, edges):
    text = open(path).read()
    if not text.startswith("digraph") or "rank=same;" not in text:
        fail("%s: not a ranked digraph" % path)
    n = len(re.findall(r"^\s*t\d+ -> t\d+", text, re.M))
    if n != edges:
        fail("%s: %d edges, want %d" % (path, n, edges))


def main():
    ap = argparse.ArgumentParser()
    for a in ("--quickstart", "--callable", "--module-dir", "--simpler", "--work"):
        ap.add_argument(a, required=True)
    o = ap.parse_args()
    os.makedirs(o.work, exist_ok=True)
    for name in os.listdir(o.work):
        os.unlink(os.path.join(o.work, name))
    for rt in ("hbg", "tmr"):
        # The quickstart opens its runtime by name (issue 14: the module is
        # found beside libsimpler.so; --module-dir is no longer needed).
        qs = [o.quickstart, o.callable, rt]
        w = lambda name: os.path.join(o.work, name)
        p = run(qs, w("q_%s_%%n.json" % rt))
        m = re.search(r"(\d+) tasks, (\d+) edges, .*PASS", p.stdout)
        if not m:
            fail("quickstart did not pass:\n" + p.stdout)
        tasks, edges = int(m.group(1)), int(m.group(2))
        slices = check_json(w("q_%s_0.json" % rt), tasks, edges, None)
        if os.path.exists(w("q_%s_1.json" % rt)):
            fail("one run, one file")
        run(qs, w("q_%s.svg" % rt))
        check_svg(w("q_%s.svg" % rt), slices, rt == "tmr")
        run(qs, w("q_%s.dot" % rt))
        check_dot(w("q_%s.dot" % rt), edges)
        run(qs, w("q_%s.txt" % rt))
        stats = open(w("q_%s.txt" % rt)).read().splitlines()
        if not stats or not all(l.startswith("stats: ") for l in stats) or \
                not any(l.startswith("stats: tasks=%d " % tasks) for l in stats):
            fail("stats file:\n" + "\n".join(stats))
        bad = run(qs, w("missing/dir/x.json"))
        if "PASS" not in bad.stdout or "cannot write the trace" not in bad.stderr:
            fail("an unwritable SIMPLER_TRACE: want PASS and a warning:\n%s%s" % (bad.stdout,
                                                                             bad.stderr))
        # The CLI is a program that uses the worker too: every run it waits
        # for (--rounds 2: two) gets its file, with the kernel names.
        run([o.simpler, "run", "vector_example", "--runtime", rt, "--rounds", "2"],
            w("cli_%s_%%n.json" % rt))
        for n in (0, 1):
            check_json(w("cli_%s_%d.json" % (rt, n)), 5, 6, {"vec_add", "vec_add_scalar", "vec_mul"})
        print("ok %s: quickstart %d tasks %d edges (json, svg, dot, stats), cli 2 runs" %
              (rt, tasks, edges))


main()
