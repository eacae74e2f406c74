#!/usr/bin/env python3
"""The CLI reaches runtimes and devices only through the worker (issue 13):
`simpler info` and `simpler smoke` find each runtime's module by name
beside libsimpler.so and describe / exercise the device it opened; an
unknown runtime is refused naming the module file looked for; and the
executable holds no platform code (no sp_device_* / sim_* symbol) and
does not link the platform library: it links libsimpler.so.

usage: check_cli_worker.py SIMPLER"""
import json
import re
import shutil
import subprocess
import sys

failures = []


def run(args, want_rc):
    p = subprocess.run(args, capture_output=True, text=True, timeout=240)
    if p.returncode != want_rc:
        failures.append(f"{' '.join(args[1:])}: exit {p.returncode}, want {want_rc}\n"
                        f"{p.stdout}{p.stderr}")
    return p.stdout + p.stderr


def expect(text, pattern, what):
    if not re.search(pattern, text, re.M):
        failures.append(f"{what}: no /{pattern}/ in:\n{text}")


def main():
    simpler = sys.argv[1]
    for rt in ("hbg", "tmr"):
        out = run([simpler, "info", "--runtime", rt], 0)
        expect(out, r"^platform: sim$", f"info --runtime {rt}")
        expect(out, rf"^device: 0 \(runtime module: {rt}\)$", f"info --runtime {rt}")
        expect(out, r"^geometry: \d+ clusters \(\d+ AIC \+ \d+ AIV cores\), \d+ AICPU threads$",
               f"info --runtime {rt}")
        expect(out, r"^device memory: 1073741824 bytes", f"info --runtime {rt}")
        out = run([simpler, "smoke", "--runtime", rt], 0)
        expect(out, r"the kernel ran on all \d+ cores", f"smoke --runtime {rt}")
        expect(out, r"^smoke: PASS$", f"smoke --runtime {rt}")
    out = run([simpler, "info", "--a2a3"], 0)
    expect(out, r"^geometry: 24 clusters \(24 AIC \+ 48 AIV cores\), 4 AICPU threads$",
           "info --a2a3")
    out = run([simpler, "info", "--runtime", "nope"], 1)
    expect(out, r"SP_EMODULE.*libsimpler_nope_sim\.so does not exist", "info --runtime nope")
    out = run([simpler, "info", "--runtime", "../hbg"], 1)
    expect(out, r"SP_EINVAL", "info --runtime ../hbg")
    p = subprocess.run([simpler, "run", "vector_example", "--runtime", "nope", "--json"],
                       capture_output=True, text=True, timeout=240)
    try:
        j = json.loads(p.stdout)
    except ValueError:
        j = {}
    if p.returncode != 1 or j.get("result") != "FAIL" or j.get("status") != "SP_EMODULE" \
            or j.get("runtime") != "nope":
        failures.append(f"run --runtime nope --json: exit {p.returncode}, {p.stdout}{p.stderr}")
    expect(p.stderr, r"^simpler: SP_EMODULE: .*libsimpler_nope_sim\.so", "run --runtime nope")
    if shutil.which("nm"):
        syms = subprocess.run(["nm", "--defined-only", simpler], capture_output=True, text=True,
                              timeout=60).stdout
        platform = [l.split()[-1] for l in syms.splitlines()
                    if re.search(r" (sp_device_|sp_kernel_binary_|sim_|sp_chip_)\w*$", l)]
        if platform:
            failures.append(f"the simpler executable holds platform code: {platform[:8]}")
    if shutil.which("readelf"):
        dyn = subprocess.run(["readelf", "-d", simpler], capture_output=True, text=True,
                             timeout=60).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
        # libsimpler.so.<ABI>: the SONAME carries the ABI major (issue 14).
        if not any(re.fullmatch(r"libsimpler\.so\.\d+", n) for n in needed) or \
                any("platform" in n for n in needed):
            failures.append(f"the simpler executable needs {needed}: want libsimpler.so.<ABI> "
                            "and no libsimpler_platform_*")
    for f in failures:
        print("FAIL:", f)
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
