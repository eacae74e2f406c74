#!/usr/bin/env python3
"""The layer rules of src/runtime/, checked by reading the source.

A table of (files, forbidden pattern, why): every file a glob names is
searched line by line for the pattern; any match fails the check, naming
the file, the line and the rule. The build enforces the device side too
(device sources compile against build/include-device/, so a host header
there does not compile); this check also catches what an include path
cannot: a relative include that climbs out of the tree.

With --cc CC --device-include DIR (the build's generated tree), it also
compiles probes against that tree the way device sources are compiled:
one including every header device code may use must compile, and each
including a host-side header must not.

Usage: check_layers.py SOURCE_ROOT [--cc CC --device-include DIR]
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

# Device-side code: what runs on the chip (the scheduler loop and pass, the
# TensorMap, the trace writer, the fault and red zone claims, hbg's device
# scheduler, tmr's orchestrator and schedulers).
DEVICE = [
    "src/runtime/device/*.[ch]",
    "src/runtime/*/device/*.[ch]",
]
RUNTIME = ["src/runtime/**/*.[ch]"]  # for the host-side rows

# The public headers device code may include (and those they include).
DEVICE_PUBLIC = "types|tensor|kernel|orchestration|status|trace|export|log|device_info|host_api"

RULES = [
    # -- device side (runtime/device, <runtime>/device) --
    (DEVICE, r'#\s*include\s*"\.\./', "device code names headers from the include tree, never by ../"),
    (DEVICE, r'#\s*include\s*"runtime/host/', "device code never includes the runtime's host side"),
    (DEVICE, r'#\s*include\s*"runtime/[a-z_]+/host/', "device code never includes a runtime's host side"),
    (DEVICE, r'#\s*include\s*"runtime/runtime\.h"', "runtime.h is the host seam to the module layer"),
    (DEVICE, r'#\s*include\s*"(module|worker|callable|cli)/', "device code never includes host layers"),
    (DEVICE, r'#\s*include\s*"platform/(?!chip\.h")', "device code sees the platform's chip interface only"),
    (DEVICE, r'#\s*include\s*"simpler/(?!(' + DEVICE_PUBLIC + r')\.h")',
     "device code includes only the public types/kernel/orchestration headers"),
    (DEVICE, r'\b(dlopen|dlsym|sp__shared_object|rt_loaded_callable)\b',
     "device code holds no host objects (use rt_dev_callable)"),
    (DEVICE, r'\bgetenv\s*\(', "settings reach device code as data, never from the environment"),
    (DEVICE, r'\bsp_(device|kernel_binary)_[a-z_]+\b',
     "device code drives the chip (platform/chip.h), never the device runner"),
    # -- the whole runtime --
    (RUNTIME, r'\bgetenv\s*\(', "settings are data: the worker reads the environment once"),
    # -- the whole runtime: one way down: the run's sp_host_api is its only
    # way to the platform (memory, copies, host-map, run storage, launch,
    # poll, wait, geometry, kernel loading); the device runner is the module
    # layer's and the backends' own.
    (RUNTIME, r'#\s*include\s*"platform/(sim/|device\.h")',
     "the runtime reaches the platform through sp_host_api, never platform/device.h or a backend"),
    (RUNTIME, r'\bsp_(device|kernel_binary)_[a-z_]+\s*\(',
     "the runtime calls the platform through sp_host_api (sp_host_*), never sp_device_* / sp_kernel_binary_*"),
    (RUNTIME, r'\bsp_(device|kernel_binary|device_main)\b',
     "the runtime holds no device runner or platform kernel handle: its sp_host_api value is its device"),
]


def strip_comments(text):
    """Blank out comments and string contents other than #include paths, so
    that prose naming a forbidden thing is not taken for a use of it."""
    out = []
    i, n = 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


# Probes for the build's device include tree: (header, must it compile).
PROBES = [
    ("simpler/types.h", True),
    ("simpler/orchestration.h", True),
    ("simpler/kernel.h", True),
    ("simpler/trace.h", True),
    ("common/wait.h", True),
    ("platform/chip.h", True),
    ("runtime/device/sched_loop.h", True),
    ("runtime/device/task_check.h", True),
    ("runtime/host/loaded_callable.h", False),
    ("runtime/host/fault_report.h", False),
    ("runtime/runtime.h", False),
    ("platform/device.h", False),
    ("platform/sim/sim_chip.h", False),
    ("simpler/module.h", False),
    ("simpler/callable.h", False),
    ("simpler/worker.h", False),
    ("runtime/host_build_graph/host/hbg_build.h", False),
]


def check_build(cc, tree):
    """0 if the device tree admits exactly what the rules allow."""
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for header, ok in PROBES:
            src = os.path.join(tmp, "probe.c")
            with open(src, "w") as f:
                f.write(f'#include "{header}"\nint probe;\n')
            rc = subprocess.run([cc, "-std=gnu11", "-fsyntax-only", "-I", tree, src],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
            if (rc == 0) != ok:
                want = "compile" if ok else "fail to compile"
                print(f"device include tree {tree}: #include \"{header}\" should {want}")
                failures += 1
    return failures


def main():
    args = sys.argv[1:]
    cc = tree = None
    if "--cc" in args:
        cc = args[args.index("--cc") + 1]
    if "--device-include" in args:
        tree = args[args.index("--device-include") + 1]
    root = args[0] if args and not args[0].startswith("--") else "."
    failures = 0
    checked = set()
    for globs, pattern, why in RULES:
        rx = re.compile(pattern)
        files = sorted({f for g in globs for f in glob.glob(os.path.join(root, g), recursive=True)})
        if not files:
            print(f"check_layers: no files match {globs}", file=sys.stderr)
            return 2
        for path in files:
            checked.add(path)
            with open(path, encoding="utf-8") as f:
                lines = strip_comments(f.read()).split("\n")
            for no, line in enumerate(lines, 1):
                if rx.search(line):
                    rel = os.path.relpath(path, root)
                    print(f"{rel}:{no}: {line.strip()}\n    rule: {why}")
                    failures += 1
    if cc and tree:
        failures += check_build(cc, tree)
    if failures:
        print(f"check_layers: {failures} violation(s)")
        return 1
    probes = f", {len(PROBES)} include probes" if cc and tree else ""
    print(f"check_layers: {len(checked)} files, {len(RULES)} rules{probes}, no violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
