#!/usr/bin/env python3
"""Summarise `make test`: per phase (normal / asan / tsan), the ctests and
the Criterion (and pytest) cases that passed of those run, and, for a phase that runs
fewer ctests than the normal one, which it left out and why.

usage: test_summary.py PHASE=BUILD_DIR ...   (e.g. normal=build asan=build-asan)

Reads BUILD_DIR/ctest-junit.xml (ctest --output-junit, written by the
Makefile's test targets) and BUILD_DIR/tests_left_out.txt (the reasons
tests/CMakeLists.txt records for the tests a configuration does not
register: lines "<ctest name regex>|<reason>"). Exit 0; the ctest runs
themselves decide pass or fail.
"""
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SYNTHESIS = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+)"
                       r" \| Crashing: (\d+)")
PLAIN = re.compile(r"^(\d+) passed, (\d+) failed$", re.M)
# pytest's last line: "12 passed in 3.40s", "1 failed, 11 passed, 2 skipped in 4.1s".
PYTEST = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [0-9.]+s", re.M)


def read_phase(build):
    """{test name: (passed, output)} from the phase's junit file, or None."""
    junit = Path(build) / "ctest-junit.xml"
    if not junit.is_file():
        return None
    tests = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        out = "".join(e.text or "" for e in case if e.tag in ("system-out", "system-err"))
        failed = any(e.tag in ("failure", "error") for e in case)
        skipped = any(e.tag == "skipped" for e in case) or case.get("status") == "notrun"
        tests[case.get("name")] = (not failed and not skipped, out)
    return tests


def reasons(build):
    path = Path(build) / "tests_left_out.txt"
    out = []
    if path.is_file():
        for line in path.read_text().splitlines():
            if "|" in line:
                pattern, why = line.split("|", 1)
                out.append((re.compile(pattern), why))
    return out


def summarise(name, tests):
    passed = sum(ok for ok, _ in tests.values())
    cases = [0, 0]  # passing, tested
    binaries = 0
    plain = [0, 0]
    pytest = [0, 0, 0]  # passed, run, files
    for _, out in tests.values():
        last = PYTEST.findall(out)
        if last:
            counts = {w: int(n) for n, w in re.findall(r"(\d+) (\w+)", last[-1])}
            pytest[0] += counts.get("passed", 0)
            pytest[1] += sum(v for k, v in counts.items() if k != "skipped" and k != "deselected")
            pytest[2] += 1
        syn = SYNTHESIS.findall(out)
        if syn:
            tested, passing, _, _ = map(int, syn[-1])
            cases[0] += passing
            cases[1] += tested
            binaries += 1
        for p, f in PLAIN.findall(out):
            plain[0] += int(p)
            plain[1] += int(p) + int(f)
    line = (f"  {name:7s} ctests {passed}/{len(tests)} passed; Criterion cases "
            f"{cases[0]}/{cases[1]} passed in {binaries} binaries")
    if plain[1]:
        line += f"; plain checks {plain[0]}/{plain[1]}"
    if pytest[2]:
        line += f"; pytest cases {pytest[0]}/{pytest[1]} passed in {pytest[2]} files"
    return line


def main(argv):
    phases = [a.split("=", 1) for a in argv if "=" in a]
    if not phases:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print("test summary (passed of run):")
    normal = None
    for name, build in phases:
        tests = read_phase(build)
        if tests is None:
            print(f"  {name:7s} not run ({build}/ctest-junit.xml is missing)")
            continue
        print(summarise(name, tests))
        if normal is None:
            normal = set(tests)
            continue
        left = sorted(normal - set(tests))
        if not left:
            continue
        why = reasons(build)
        print(f"          left out {len(left)} of the {phases[0][0]} phase's ctests:")
        for t in left:
            r = next((w for p, w in why if p.search(t)), "no reason recorded in tests/CMakeLists.txt")
            print(f"            {t}: {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
