#!/usr/bin/env python3
"""The command line's conventions (issue 14, "The command line"):

* every command has --help (stdout, exit 0) and takes --opt=value as well as
  --opt value; `simpler --version` prints the release and the ABI versions;
* unknown commands, examples, cases and options are usage errors (exit 2)
  naming the closest known one ("did you mean vector_example?");
* options are checked before anything runs: a tmr-only option or case on
  hbg, a window that is not a power of two, numbers out of range (exit 2);
* exit codes: 0 pass, 1 failed run, 2 usage, 3 a file that cannot be read
  or written (a trace, --save, --param KEY=@FILE);
* an error is printed once, on stderr, as "simpler: <STATUS>: <message>"
  and its hint, the FAIL line staying on stdout;
* --param values of any length, and KEY=@FILE (a 33-sequence paged_attention);
* --json prints one JSON object;
* the --rounds progress bar goes to stderr only when it is a terminal, and
  fits the terminal's width;
* --replay off|auto|only (issue 16): rounds after the first replay the
  recorded graph (replayed=K/N), only fails by name when nothing is kept.

usage: check_cli_options.py SIMPLER WORKDIR"""
import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios

failures = []


def run(args, want_rc, what=None, env=None):
    p = subprocess.run(args, capture_output=True, text=True, timeout=240, env=env)
    what = what or " ".join(args[1:])
    if p.returncode != want_rc:
        failures.append(f"{what}: exit {p.returncode}, want {want_rc}\n"
                        f"stdout: {p.stdout[-1500:]}\nstderr: {p.stderr[-1500:]}")
    return p


def expect(text, pattern, what):
    if not re.search(pattern, text, re.M):
        failures.append(f"{what}: no /{pattern}/ in:\n{text[-2000:]}")


def run_json(args, want_rc, what=None, env=None):
    p = run(args + ["--json"], want_rc, what, env)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if len(lines) != 1:
        failures.append(f"{what or args}: --json printed {len(lines)} lines, want 1:\n{p.stdout}")
        return {}
    try:
        return json.loads(lines[0])
    except ValueError as e:
        failures.append(f"{what or args}: --json is not JSON ({e}): {lines[0][:400]}")
        return {}


def main():
    simpler, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    # --help for every command, and the top level; --version.
    for cmd in ("info", "run", "list", "smoke"):
        p = run([simpler, cmd, "--help"], 0)
        expect(p.stdout, rf"^usage: simpler {cmd}\b", f"{cmd} --help")
        if p.stderr:
            failures.append(f"{cmd} --help wrote to stderr: {p.stderr}")
    p = run([simpler, "--help"], 0)
    expect(p.stdout, r"^usage: simpler <command>", "--help")
    p = run([simpler, "--version"], 0)
    expect(p.stdout, r"^simpler \d+\.\d+\.\d+$", "--version")
    expect(p.stdout, r"^libsimpler \d+\.\d+\.\d+ \(ABI \d+", "--version")
    expect(p.stdout, r"runtime module ABI \d+, orchestration ABI \d+, callable blob version \d+",
           "--version")

    # Suggestions, as usage errors.
    p = run([simpler, "rnu"], 2)
    expect(p.stderr, r"unknown command 'rnu' \(did you mean run\?\)", "unknown command")
    p = run([simpler, "run", "vector_exampel"], 2)
    expect(p.stderr, r"did you mean vector_example\?", "unknown example")
    p = run([simpler, "run", "paged_attention", "--case", "varlne"], 2)
    expect(p.stderr, r"did you mean varlen\?", "unknown case")
    p = run([simpler, "run", "vector_example", "--runtme=tmr"], 2)
    expect(p.stderr, r"unknown option '--runtme=tmr' \(did you mean --runtime\?\)",
           "unknown option")
    p = run([simpler, "info", "--platfrom", "sim"], 2)
    expect(p.stderr, r"did you mean --platform\?", "info: unknown option")
    p = run([simpler, "list", "dummy_chian"], 2)
    expect(p.stderr, r"did you mean dummy_chain\?", "list: unknown example")
    p = run([simpler, "run", "vector_example", "--rounds"], 2)
    expect(p.stderr, r"option '--rounds' needs a value", "missing value")

    # Checked before anything runs.
    p = run([simpler, "run", "vector_example", "--runtime", "hbg", "--window", "8"], 2)
    expect(p.stderr, r"--window is a tmr option", "--window on hbg")
    p = run([simpler, "run", "vector_example", "--trace-records=64"], 2)
    expect(p.stderr, r"--trace-records is a tmr option", "--trace-records on hbg")
    p = run([simpler, "run", "vector_example", "--runtime", "tmr", "--window", "48"], 2)
    expect(p.stderr, r"--window must be a power of two", "--window 48")
    p = run([simpler, "run", "control_rw", "--case", "readback"], 2)
    expect(p.stderr, r"case 'readback' of control_rw is tmr only", "tmr-only case on hbg")
    p = run([simpler, "run", "vector_example", "--sched", "65"], 2)
    expect(p.stderr, r"--sched must be an integer in 1\.\.64", "--sched 65")
    p = run([simpler, "run", "vector_example", "--rounds", "0"], 2)
    p = run([simpler, "run", "vector_example", "--input", "x=a.npy"], 2)
    expect(p.stderr, r"options of a callable file", "--input on an example")

    # --opt=value and --opt value give the same run; --json.
    for form in (["--runtime=tmr", "--rounds=2"], ["--runtime", "tmr", "--rounds", "2"]):
        j = run_json([simpler, "run", "vector_example"] + form, 0, f"run {' '.join(form)}")
        if j and not (j.get("result") == "PASS" and j.get("runtime") == "tmr"
                      and j.get("rounds") == 2 and j.get("tasks") == 5 and j.get("edges") == 6
                      and j.get("example") == "vector_example" and "device" in j["timings_us"]
                      and "f" in j.get("outputs", {})):
            failures.append(f"run {' '.join(form)} --json: {j}")

    # A failed run: one error on stderr ("simpler: STATUS: message" + hint),
    # the FAIL line on stdout; with --json the object says the status.
    p = run([simpler, "run", "vector_example", "--runtime", "hbx"], 1)
    expect(p.stdout, r"^FAIL vector_example runtime=hbx case=default status=SP_EMODULE$",
           "unknown runtime: FAIL line")
    errs = [l for l in p.stderr.splitlines() if l.startswith("simpler")]
    if len(errs) != 1 or not re.match(r"simpler: SP_EMODULE: .*did you mean --runtime hbg\?",
                                        errs[0]):
        failures.append(f"unknown runtime: want one 'simpler: SP_EMODULE: ...' line, got:\n"
                        f"{p.stderr}")
    expect(p.stderr, r"^  hint: ", "unknown runtime: hint")
    if "SP_EMODULE" in p.stdout.replace("status=SP_EMODULE", ""):
        failures.append(f"unknown runtime: the message is printed twice:\n{p.stdout}")
    j = run_json([simpler, "run", "vector_example", "--runtime", "hbx"], 1)
    if j and (j.get("result") != "FAIL" or j.get("status") != "SP_EMODULE"):
        failures.append(f"unknown runtime --json: {j}")

    # Exit 3: a file that cannot be written or read.
    missing = os.path.join(work, "no", "such", "dir")
    # Before the run: a directory that does not exist (nothing runs) ...
    p = run([simpler, "run", "vector_example", "--trace", os.path.join(missing, "t.json")], 3)
    expect(p.stderr, r"^simpler: cannot write .*t\.json' \(--trace\)", "unwritable --trace")
    if p.stdout:
        failures.append(f"unwritable --trace: something ran: {p.stdout}")
    p = run([simpler, "run", "vector_example", "--save", os.path.join(missing, "out")], 3)
    expect(p.stderr, r"^simpler: cannot create", "unwritable --save")
    # ... and after it: the path is a directory (the write itself fails).
    for opt in ("--trace", "--swimlane", "--deps"):
        p = run([simpler, "run", "vector_example", opt, work], 3, f"{opt} DIR")
        expect(p.stderr, rf"^simpler: cannot write '{re.escape(work)}' \({opt}\)", f"{opt} DIR")
        expect(p.stdout, r"^FAIL vector_example .*could not be written", f"{opt} DIR: FAIL line")
    p = run([simpler, "run", "paged_attention", "--param",
             "context_lens=@" + os.path.join(missing, "lens")], 3)
    expect(p.stderr, r"^simpler: cannot read", "unreadable --param @FILE")

    # --param of any length: 33 context lengths (> 127 characters), given
    # inline and from a file, on both runtimes.
    lens = ",".join(str(100 + 7 * i) for i in range(33))
    assert len(lens) > 127
    lens_file = os.path.join(work, "lens.txt")
    with open(lens_file, "w") as f:
        f.write(lens + "\n")
    small = ["--param", "heads=2"]
    for rt, value in (("tmr", lens), ("hbg", "@" + lens_file)):
        j = run_json([simpler, "run", "paged_attention", "--case", "varlen", "--runtime", rt,
                      "--param", "batch=33", "--param", "context_lens=" + value] + small, 0,
                     f"paged_attention context_lens={value[:20]}...")
        if j and j.get("result") != "PASS":
            failures.append(f"33-sequence paged_attention: {j}")

    # The progress bar: nothing on stderr when it is not a terminal; on a
    # terminal of 50 columns, lines no wider than that.
    p = run([simpler, "run", "dummy_chain", "--rounds", "5"], 0)
    if p.stderr:
        failures.append(f"--rounds with stderr not a terminal wrote: {p.stderr!r}")
    expect(p.stdout, r"^PASS dummy_chain", "--rounds: PASS line on stdout")
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 50, 0, 0))
    proc = subprocess.Popen([simpler, "run", "dummy_chain", "--rounds", "20"],
                            stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    tty = b""
    while True:
        r, _, _ = select.select([master], [], [], 240)
        if not r:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        tty += chunk
    out = proc.stdout.read()
    proc.wait(timeout=240)
    os.close(master)
    if proc.returncode != 0 or not out.startswith("PASS dummy_chain"):
        failures.append(f"--rounds on a terminal: exit {proc.returncode}, stdout {out!r}")
    text = tty.decode(errors="replace")
    if "[" not in text or "/20" not in text:
        failures.append(f"--rounds on a terminal: no bar on stderr: {text!r}")
    widest = max((len(s) for s in re.split(r"[\r\n]", text)), default=0)
    if widest > 50:
        failures.append(f"--rounds bar is {widest} columns on a 50-column terminal: {text!r}")

    # A device-memory failure is printed once: the library's own error lines
    # about it (the platform logs each failed commit) are folded into the
    # command's one "simpler: SP_EDEVMEM: ..." line, unless SIMPLER_LOG asks.
    env = dict(os.environ, SIMPLER_SIM_MEMORY_MB="8")
    env.pop("SIMPLER_LOG", None)
    p = subprocess.run([simpler, "run", "paged_attention", "--case", "large"], capture_output=True,
                       text=True, timeout=240, env=env)
    errs = [l for l in p.stderr.splitlines() if l.startswith("simpler")]
    if p.returncode != 1 or len(errs) != 1 or not errs[0].startswith("simpler: SP_EDEVMEM: ") \
            or "SP_EDEVMEM: SP_EDEVMEM" in errs[0]:
        failures.append(f"out of device memory: exit {p.returncode}, want 1 and one error line:\n"
                        f"{p.stderr}")
    env["SIMPLER_LOG"] = "info"
    p = subprocess.run([simpler, "run", "paged_attention", "--case", "large"], capture_output=True,
                       text=True, timeout=240, env=env)
    if "simpler error: device 0" not in p.stderr:
        failures.append(f"SIMPLER_LOG=info: the device's error lines are not shown:\n{p.stderr}")

    # --replay (issue 16): auto records the graph on the first round and
    # replays it on the others, on both runtimes; only fails by name when
    # nothing is recorded (a fresh process has nothing); a bad mode is a
    # usage error. Outside the checking mode (make test's sanitizer phases
    # set SIMPLER_CHECK=1; hbg never keeps a checking-mode graph).
    plain = {k: v for k, v in os.environ.items() if k != "SIMPLER_CHECK"}
    for rt in ("hbg", "tmr"):
        p = run([simpler, "run", "decoder", "--runtime", rt, "--rounds", "4", "--replay", "auto"],
                0, f"--replay auto on {rt}", plain)
        expect(p.stdout, r"^PASS decoder runtime=" + rt + r" .* replayed=3/4$", f"--replay auto on {rt}")
        j = run_json([simpler, "run", "moe", "--runtime", rt, "--case", "half_empty", "--rounds", "3",
                      "--replay", "auto"], 0, f"--replay auto --json on {rt}", plain)
        if j.get("replayed") != 2 or not j.get("skipped"):
            failures.append(f"moe --replay auto on {rt}: replayed {j.get('replayed')}, skipped "
                            f"{j.get('skipped')}; want 2 and > 0")
        p = run([simpler, "run", "vector_example", "--runtime", rt, "--replay", "only"], 1,
                f"--replay only on {rt}")
        expect(p.stderr, r"^simpler: SP_EREPLAY_MISS: ", f"--replay only on {rt}")
    p = run([simpler, "run", "vector_example", "--replay", "sometimes"], 2, "--replay sometimes")
    expect(p.stderr, r"--replay wants off, auto or only", "--replay sometimes")

    for f in failures:
        print("FAIL:", f)
    print(f"{'FAIL' if failures else 'PASS'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
