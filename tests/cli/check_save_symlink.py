#!/usr/bin/env python3
"""`simpler run --save DIR` never writes through a symbolic link planted in
DIR (issue 12, item 16): a link where an output file goes is refused with a
named error and a non-zero exit, and the link's target keeps its contents;
without a link the files are written (and a second --save replaces them).

usage: check_save_symlink.py SIMPLER WORKDIR"""
import os
import shutil
import subprocess
import sys


def run(simpler, save_dir):
    return subprocess.run(
        [simpler, "run", "vector_example", "--runtime", "hbg", "--save", save_dir],
        capture_output=True, text=True, timeout=240)


def main():
    simpler, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    save = os.path.join(work, "save")
    os.makedirs(save)
    victim = os.path.join(work, "victim.txt")
    with open(victim, "w") as f:
        f.write("precious\n")
    # The output tensor of vector_example is 'f': f.npy is a planted link.
    os.symlink(victim, os.path.join(save, "f.npy"))
    r = run(simpler, save)
    out = r.stdout + r.stderr
    failures = []
    if r.returncode == 0:
        failures.append("--save through a planted symlink exited 0")
    if "symbolic link" not in out:
        failures.append("no named error about the symbolic link: " + out.strip()[-400:])
    with open(victim) as f:
        if f.read() != "precious\n":
            failures.append("the symlink's target was overwritten")
    if not os.path.islink(os.path.join(save, "f.npy")):
        failures.append("the planted link was replaced (expected it left alone)")

    # No link: written, and written again over the first files.
    clean = os.path.join(work, "clean")
    for attempt in range(2):
        r = run(simpler, clean)
        if r.returncode != 0:
            failures.append("plain --save failed (attempt %d): %s" %
                            (attempt, (r.stdout + r.stderr).strip()[-400:]))
            break
        for name in ("a", "b", "f"):
            p = os.path.join(clean, name + ".npy")
            with open(p, "rb") as f:
                if f.read(6) != b"\x93NUMPY":
                    failures.append(p + " is not a .npy file")
    for msg in failures:
        print("FAIL:", msg)
    print("%d failed" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
