#!/usr/bin/env python3
"""The CLI's trace exports, end to end on both runtimes (ctest cli/trace_files).

Runs `simpler run vector_example --trace --swimlane --deps --stats` and checks:
the Chrome-trace JSON parses, has exactly one complete task event per task (5)
and one flow start and end per edge (6), with dispatch <= start <= end and every
consumer starting after each producer ends; the DOT file has 6 edges (the PASS
line's edges=); the SVG is well-formed XML with a bar per task; --stats prints
its summary after the PASS line. With libsimpler's exporters (src/trace) also:
queued slices and the critical path in the JSON, a rank per depth and the
critical path in the DOT, scheduler / core (tmr: orchestrator) lanes and the
critical path in the SVG. Also: the run's outputs (--save) are the same
bytes with tracing on and off.

usage: check_trace_files.py SIMPLER_BINARY WORK_DIR
"""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("%s exited %d:\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def check_json(path, tasks, edges):
    with open(path) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X" and e.get("cat") == "task"]
    if len(slices) != tasks:
        fail("%s: %d task events, want %d" % (path, len(slices), tasks))
    if sorted(e["args"]["task"] for e in slices) != list(range(tasks)):
        fail("%s: not one event per task id" % path)
    by_task = {}
    for e in slices:
        a = e["args"]
        # A chained slice (queued behind its last producer) is dispatched
        # before it is ready; it still starts only once ready.
        ready_by = a["start_us"] if a.get("chained") else a["dispatch_us"]
        if not (a["ready_us"] <= ready_by + 1e-3 and a["dispatch_us"] <= a["start_us"] <= a["end_us"]):
            fail("%s: task %d times out of order: %s" % (path, a["task"], a))
        if abs(e["ts"] - a["start_us"]) > 1e-3 or abs(e["ts"] + e["dur"] - a["end_us"]) > 2e-3:
            fail("%s: task %d event does not span start..end" % (path, a["task"]))
        by_task[a["task"]] = e
    starts = [e for e in ev if e["ph"] == "s"]
    ends = [e for e in ev if e["ph"] == "f"]
    if len(starts) != edges or len(ends) != edges:
        fail("%s: %d flow starts and %d ends, want %d each" % (path, len(starts), len(ends), edges))
    if sorted(e["id"] for e in starts) != sorted(e["id"] for e in ends):
        fail("%s: flow ids do not pair" % path)
    for s in starts:
        f = next(e for e in ends if e["id"] == s["id"])
        if f["ts"] + 1e-3 < s["ts"]:
            fail("%s: flow %d ends (%.3f) before it starts (%.3f)" % (path, s["id"], f["ts"], s["ts"]))
    names = {e["name"] for e in slices}
    if not names <= {"vec_add", "vec_add_scalar", "vec_mul"}:
        fail("%s: task names are not the kernels' entry names: %s" % (path, names))
    tracks = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in slices:
        if (e["pid"], e["tid"]) not in tracks:
            fail("%s: task event on an unnamed track" % path)
    if library_export(doc):
        queued = [e for e in ev if e["ph"] == "X" and e.get("cat") == "queued"]
        if not queued or any((e["pid"], e["tid"]) not in tracks for e in queued):
            fail("%s: no queued slices, or one on an unnamed track" % path)
        crit = [e for e in slices if e["args"]["critical"]]
        if len(crit) != doc["otherData"]["critical_path_tasks"] or not crit:
            fail("%s: %d slices marked critical, otherData says %s" %
                 (path, len(crit), doc["otherData"]["critical_path_tasks"]))
        if len([e for e in starts if e["cat"] == "critical"]) != len(crit) - 1:
            fail("%s: the critical flows do not link the critical tasks" % path)
    return library_export(doc)


def library_export(doc):
    """The exporters of libsimpler (src/trace) mark the critical path; the
    CLI's own (src/cli/trace_*.c) did not. Once `simpler run` writes its
    files through sp_worker_write_trace, every check below runs."""
    return "critical_path_tasks" in doc["otherData"]


def check_dot(path, edges, library):
    text = open(path).read()
    n = len(re.findall(r"^\s*t\d+ -> t\d+", text, re.M))
    if n != edges:
        fail("%s: %d edges, want %d" % (path, n, edges))
    if not text.startswith("digraph") or "label=\"RAW\"" not in text:
        fail("%s: not a labelled digraph" % path)
    # vector_example has four depths: a rank each, the critical path in red.
    if library and (text.count("rank=same;") != 4 or "color=red" not in text):
        fail("%s: not ranked by depth with the critical path marked" % path)


def check_svg(path, tasks, library, rt):
    root = ET.parse(path).getroot()
    if not root.tag.endswith("svg"):
        fail("%s: root is %s" % (path, root.tag))
    bars = [r for r in root.iter("{http://www.w3.org/2000/svg}rect")
            if r.find("{http://www.w3.org/2000/svg}title") is not None]
    if len(bars) != tasks:
        fail("%s: %d task bars, want %d" % (path, len(bars), tasks))
    if library:
        labels = {t.text for t in root.iter("{http://www.w3.org/2000/svg}text")}
        want = {"scheduler 0", "cluster 0 AIC"} | ({"orchestrator"} if rt == "tmr" else set())
        if not want <= labels:
            fail("%s: lanes %s missing" % (path, want - labels))
        if not any("critical" in r.get("class", "") for r in bars):
            fail("%s: the critical path is not outlined" % path)


def main():
    simpler, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    for rt in ("hbg", "tmr"):
        j, s, d = (os.path.join(work, "v_%s.%s" % (rt, x)) for x in ("json", "svg", "dot"))
        out = run([simpler, "run", "vector_example", "--runtime", rt, "--trace", j,
                   "--swimlane", s, "--deps", d, "--stats", "--trace-level", "3",
                   "--save", os.path.join(work, "on_" + rt)])
        lines = out.splitlines()
        pas = [i for i, l in enumerate(lines) if l.startswith("PASS")]
        if not pas:
            fail("no PASS line:\n" + out)
        m = re.search(r"tasks=(\d+) edges=(\d+)", lines[pas[0]])
        tasks, edges = int(m.group(1)), int(m.group(2))
        if (tasks, edges) != (5, 6):
            fail("vector_example: tasks=%d edges=%d" % (tasks, edges))
        after = lines[pas[0] + 1:]
        for want in ("stats: tasks=5", "stats: edges=6", "critical_path_us=", "stats: kernel vec_add ",
                     "utilisation", "ready_to_dispatch_us"):
            if not any(want in l for l in after):
                fail("--stats: no '%s' after the PASS line:\n%s" % (want, out))
        if rt == "hbg" and not any("stats: build stage_us=" in l for l in after):
            fail("--stats: no hbg build phases:\n" + out)
        library = check_json(j, tasks, edges)
        check_dot(d, edges, library)
        check_svg(s, tasks, library, rt)
        run([simpler, "run", "vector_example", "--runtime", rt, "--save", os.path.join(work, "off_" + rt)])
        for name in sorted(os.listdir(os.path.join(work, "off_" + rt))):
            a = open(os.path.join(work, "off_" + rt, name), "rb").read()
            b = open(os.path.join(work, "on_" + rt, name), "rb").read()
            if a != b:
                fail("%s: %s differs with tracing on" % (rt, name))
        print("ok %s: %d task events, %d flows, DOT %d edges, SVG well-formed" % (rt, tasks, edges, edges))
    # A progress bar only on a terminal: not here, stdout is a pipe.
    out = run([simpler, "run", "vector_example", "--rounds", "3"])
    if "\r" in out or "#" in out:
        fail("--rounds drew a progress bar into a pipe:\n" + repr(out))
    print("ok --rounds: no bar when stdout is not a terminal")


main()
