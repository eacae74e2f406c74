#!/usr/bin/env python3
"""`simpler run FILE.spc` runs a user's callable (issue 14, "Your own callable
in every tool"): the quickstart's orchestration and kernels (z = 2*x + y,
tile by tile), packed here with `simpler pack` (without an argument
signature: arguments in command-line order), with x
and y read from .npy files (format 1.0 and 2.0), z created from
--output z=4096:f32, the tile from --scalar, on both runtimes, with
--trace/--swimlane/--deps/--stats/--save/--json; z (saved as z.npy and
checksummed in the JSON) is checked element by element against 2*x + y
computed here. Bad inputs are refused by name before anything runs: a
Fortran-order, big-endian or object array, a truncated file, a bad
SHAPE:DTYPE (exit 2), a file that does not exist (exit 3), a file that is
not a callable (exit 2).

The .npy files are written and read here with struct (numpy is not needed);
when numpy is installed, z.npy is also checked with numpy.load.

With --signature, the same objects are packed with an argument signature
(`simpler pack --args`) and the arguments are looked up by name in any
order and checked against it before anything runs: a missing or unknown
argument (with the closest name), a wrong dtype, a wrong extent of a
symbol, an --output of the wrong dtype (exit 2, SP_EARG_SIGNATURE naming
the argument).

usage: check_run_file.py SIMPLER ORCH.so KERNELS.so WORKDIR [--signature]"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

N, TILE = 4096, 512
failures = []


def npy_bytes(descr, shape, payload, version=1, fortran=False):
    shape_text = "(" + "".join(f"{d}," for d in shape) + ")"
    header = (f"{{'descr': '{descr}', 'fortran_order': {fortran}, "
              f"'shape': {shape_text}, }}").encode()
    pre = 10 if version == 1 else 12
    pad = (64 - (pre + len(header) + 1) % 64) % 64
    header += b" " * pad + b"\n"
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([version, 0]) + size + header + payload


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def read_npy(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    if raw[6] == 1:
        hlen, start = struct.unpack("<H", raw[8:10])[0], 10
    else:
        hlen, start = struct.unpack("<I", raw[8:12])[0], 12
    header = raw[start:start + hlen].decode()
    return header, raw[start + hlen:]


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return f"{h:016x}"


def run(args, want_rc, what):
    p = subprocess.run(args, capture_output=True, text=True, timeout=240)
    if p.returncode != want_rc:
        failures.append(f"{what}: exit {p.returncode}, want {want_rc}\n"
                        f"stdout: {p.stdout[-1500:]}\nstderr: {p.stderr[-1500:]}")
    return p


def expect(text, pattern, what):
    if not re.search(pattern, text, re.M):
        failures.append(f"{what}: no /{pattern}/ in:\n{text[-2000:]}")


def check_signature(simpler, pack, work):
    signed = os.path.join(work, "signed.spc")
    run(pack + ["-o", signed, "--args", "x:in:f32[n], y:in:f32[n], z:out:f32[n], tile:scalar"],
        0, "pack --args")
    x = [f32(0.125 * i) for i in range(N)]
    y = [f32(7.0 - i) for i in range(N)]
    want = [f32(2.0 * a + b) for a, b in zip(x, y)]
    xp = write(os.path.join(work, "x.npy"), npy_bytes("<f4", (N,), struct.pack(f"<{N}f", *x)))
    yp = write(os.path.join(work, "y.npy"), npy_bytes("<f4", (N,), struct.pack(f"<{N}f", *y)))
    y64 = write(os.path.join(work, "y64.npy"), npy_bytes("<f8", (N,), struct.pack(f"<{N}d", *y)))
    yshort = write(os.path.join(work, "yshort.npy"),
                   npy_bytes("<f4", (N // 2,), struct.pack(f"<{N // 2}f", *y[:N // 2])))
    save = os.path.join(work, "signed_out")
    # Any order: the names say which is which.
    args = ["--scalar", f"tile={TILE}", "--output", f"z={N}:f32", "--input", f"y={yp}",
            "--input", f"x={xp}"]
    for rt in ("hbg", "tmr"):
        p = run([simpler, "run", signed, "--runtime", rt, "--save", save, "--json"] + args, 0,
                f"signed run on {rt}")
        try:
            j = json.loads(p.stdout)
        except ValueError:
            j = {}
        if j.get("result") != "PASS":
            failures.append(f"signed run on {rt}: {p.stdout[:400]}")
        _, data = read_npy(os.path.join(save, "z.npy"))
        if list(struct.unpack(f"<{N}f", data[:4 * N])) != want:
            failures.append(f"signed run on {rt}: z is not 2*x + y")

    def refused(extra_args, pattern, what):
        p = run([simpler, "run", signed] + extra_args, 2, what)
        expect(p.stderr, pattern, what)

    refused(args[:2] + args[4:], r"argument 'z' of the callable is missing", "missing z")
    refused(args[2:] + ["--scalar", f"tlie={TILE}"], r"no argument 'tlie'.*did you mean tile\?",
            "misspelt scalar")
    refused([a if a != f"y={yp}" else f"y={y64}" for a in args],
            r"^simpler: SP_EARG_SIGNATURE: .*'y'", "y of dtype f64")
    refused([a if a != f"y={yp}" else f"y={yshort}" for a in args],
            r"^simpler: SP_EARG_SIGNATURE: .*'y'", "y of the wrong length")
    refused([a if a != f"z={N}:f32" else f"z={N}:f16" for a in args],
            r"^simpler: SP_EARG_SIGNATURE: .*'z'", "z of dtype f16")
    refused(args[2:] + ["--input", f"tile={xp}"], r"argument 'tile' is a scalar",
            "a tensor for a scalar")
    for f in failures:
        print("FAIL:", f)
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


def main():
    simpler, orch, kernels, work = sys.argv[1:5]
    signature = "--signature" in sys.argv[5:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    callable_file = os.path.join(work, "quickstart.spc")
    pack = [simpler, "pack", "--orch", orch, "--entry", "quickstart_orch", "--config",
            "quickstart_config", "--kernel", f"0:aiv:{kernels}:qs_scale:ios", "--kernel",
            f"1:aiv:{kernels}:qs_add:iie"]
    run(pack + ["-o", callable_file], 0, "pack the quickstart")
    if signature:
        return check_signature(simpler, pack, work)
    x = [f32(0.5 * i - 100.0) for i in range(N)]
    y = [f32(3.0 - 0.25 * i) for i in range(N)]
    want = [f32(2.0 * a + b) for a, b in zip(x, y)]
    xp = write(os.path.join(work, "x.npy"),
               npy_bytes("<f4", (N,), struct.pack(f"<{N}f", *x), version=1))
    yp = write(os.path.join(work, "y.npy"),
               npy_bytes("<f4", (N,), struct.pack(f"<{N}f", *y), version=2))
    base = [simpler, "run", callable_file, "--input", f"x={xp}", "--input", f"y={yp}",
            "--output", f"z={N}:f32", "--scalar", f"tile={TILE}"]

    for rt in ("hbg", "tmr"):
        d = os.path.join(work, rt)
        os.makedirs(d)
        files = {k: os.path.join(d, n) for k, n in
                 (("trace", "t.json"), ("swimlane", "s.svg"), ("deps", "d.dot"))}
        p = run(base + ["--runtime", rt, "--trace", files["trace"], "--swimlane",
                        files["swimlane"], "--deps", files["deps"], "--stats",
                        "--save", os.path.join(d, "out"), "--json"], 0, f"run FILE.spc on {rt}")
        try:
            j = json.loads(p.stdout)
        except ValueError:
            failures.append(f"{rt}: --json output is not one JSON object: {p.stdout[:500]}")
            continue
        if j.get("result") != "PASS" or j.get("callable") != callable_file or \
                j.get("runtime") != rt or j.get("tasks") != 2 * N // TILE:
            failures.append(f"{rt}: --json: {j}")
        if not j.get("trace", {}).get("stats"):
            failures.append(f"{rt}: --json has no trace stats with --stats: {j}")
        try:
            header, data = read_npy(os.path.join(d, "out", "z.npy"))
        except (OSError, ValueError) as e:
            failures.append(f"{rt}: --save wrote no z.npy: {e}")
            continue
        if "'<f4'" not in header or f"({N},)" not in header:
            failures.append(f"{rt}: z.npy header {header!r}")
        got = struct.unpack(f"<{N}f", data[:4 * N])
        bad = [i for i in range(N) if got[i] != want[i]]
        if bad:
            i = bad[0]
            failures.append(f"{rt}: z[{i}] = {got[i]}, want 2*{x[i]} + {y[i]} = {want[i]} "
                            f"({len(bad)} wrong)")
        if j.get("outputs", {}).get("z", {}).get("fnv1a64") != fnv1a64(data[:4 * N]):
            failures.append(f"{rt}: the JSON checksum of z does not match z.npy: {j.get('outputs')}")
        if os.path.exists(os.path.join(d, "out", "x.npy")):
            failures.append(f"{rt}: --save wrote the input x too (outputs only)")
        try:
            import numpy
            z = numpy.load(os.path.join(d, "out", "z.npy"))
            if z.shape != (N,) or z.dtype != numpy.float32 or list(z) != want:
                failures.append(f"{rt}: numpy.load(z.npy) disagrees")
        except ImportError:
            pass
        try:
            with open(files["trace"]) as f:
                ev = json.load(f)["traceEvents"]
            if not any(e.get("ph") == "X" for e in ev):
                failures.append(f"{rt}: the trace has no slices")
            ET.parse(files["swimlane"])
            with open(files["deps"]) as f:
                if "digraph" not in f.read():
                    failures.append(f"{rt}: the DOT file has no digraph")
        except (OSError, ValueError, ET.ParseError) as e:
            failures.append(f"{rt}: a trace file is missing or malformed: {e}")

    # The text form: the PASS line and the stats after it.
    p = run(base + ["--stats"], 0, "run FILE.spc (text)")
    expect(p.stdout, rf"^PASS {re.escape(callable_file)} runtime=hbg tasks=16 edges=\d+ ",
           "text PASS line")
    expect(p.stdout, r"^stats: ", "text --stats")

    # Refused by name before anything runs.
    payload = struct.pack(f"<{N}f", *x)
    bad = {
        "fortran": (npy_bytes("<f4", (N,), payload, fortran=True), r"Fortran-order"),
        "bigendian": (npy_bytes(">f4", (N,), payload), r"big-endian"),
        "object": (npy_bytes("|O", (N,), payload), r"object dtype"),
        "complex": (npy_bytes("<c8", (N,), payload), r"has no simpler dtype"),
        "truncated": (npy_bytes("<f4", (N,), payload[:100]), r"truncated data"),
        "notnpy": (b"hello, world\n" * 10, r"not a \.npy file"),
    }
    for name, (data, pattern) in bad.items():
        path = write(os.path.join(work, name + ".npy"), data)
        args = [a if a != f"x={xp}" else f"x={path}" for a in base]
        p = run(args, 2, f"--input x={name}.npy")
        expect(p.stderr, r"^simpler: SP_EINVAL: --input x=.*: .*" + pattern, f"{name}.npy")
    p = run([a if a != f"x={xp}" else "x=" + os.path.join(work, "missing.npy") for a in base], 3,
            "--input of a missing file")
    expect(p.stderr, r"^simpler: cannot read .*missing\.npy", "missing input")
    p = run([a if a != f"z={N}:f32" else f"z={N}:f33" for a in base], 2, "--output z=4096:f33")
    expect(p.stderr, r"--output z=4096:f33: want SHAPE:DTYPE", "bad --output")
    p = run([simpler, "run", os.path.join(work, "missing.spc")], 3, "missing callable")
    p = run([simpler, "run", xp.replace("x.npy", "x.npy"), "--input", f"x={xp}"], 2,
            "an .npy given as the callable")
    expect(p.stderr, r"^simpler: SP_EBLOB: ", "not a callable")
    p = run(base + ["--case", "small"], 2, "--case on a callable file")
    expect(p.stderr, r"--case and --param are options of the examples", "--case on a file")

    for f in failures:
        print("FAIL:", f)
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
