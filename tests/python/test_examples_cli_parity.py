"""The Python binding and the command line agree (issue 15): for every
example, `simpler run EXAMPLE --save DIR` writes the run's inputs and
outputs as .npy; the same inputs run from Python, on the same runtime,
give the same outputs, bit for bit (the same kernels on the same data in
the same graph order).

The scalars the command line passes are the case's parameters (`simpler
list EXAMPLE`), restated here per example; INOUT tensors start from the
example's initial value (dummy_chain's counter: 0).
"""
import os
import subprocess

import numpy as np
import pytest

import simpler
import simpler._paths as paths

RUNTIMES = ("hbg", "tmr")

# example -> [(case or None, {param: value}, scalars(params) -> tuple)]
CASES = {
    "vector_example": [(None, {"n": 1000, "blocks": 3}, lambda p: (p["blocks"],))],
    "matmul_diamond": [(None, {"n": 32}, lambda p: ())],
    "bgemm": [("small", {}, lambda p: ())],
    "paged_attention": [("small", {"head_dim": 16},
                         lambda p: (np.float32(1.0 / np.sqrt(p["head_dim"])),))],
    "dummy_chain": [(None, {"stamps": 5, "gap": 2}, lambda p: (p["gap"],))],
    "control_rw": [(None, {"n": 64}, lambda p: ())],
}


def simpler_cli():
    if not paths.BUILD_TREE:
        pytest.skip("an installed simpler: this test runs from the build tree")
    exe = os.path.join(os.path.dirname(paths.EXAMPLES_DIR), "bin", "simpler")
    if not os.access(exe, os.X_OK):
        pytest.skip(f"{exe} is not built")
    return exe


def params():
    for name, cases in CASES.items():
        for case, p, scalars in cases:
            for rt in RUNTIMES:
                yield pytest.param(name, case, p, scalars, rt, id=f"{rt}-{name}-{case or 'default'}")


@pytest.fixture(scope="module")
def workers():
    ws = {rt: simpler.Worker(runtime=rt) for rt in RUNTIMES}
    yield ws
    for w in ws.values():
        w.close()


@pytest.mark.parametrize("name,case,p,scalars,rt", list(params()))
def test_python_run_matches_cli(tmp_path, workers, name, case, p, scalars, rt):
    exe = simpler_cli()
    cmd = [exe, "run", name, "--runtime", rt, "--save", str(tmp_path)]
    if case:
        cmd += ["--case", case]
    for k, v in p.items():
        cmd += ["--param", f"{k}={v}"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("PASS"), r.stdout

    c = simpler.example(name)
    tensors, outputs = [], {}
    for spec in (a for a in c.args if a.kind == "tensor"):
        saved = np.load(tmp_path / f"{spec.name}.npy")
        if spec.dir == simpler.IN:
            tensors.append(saved)
        elif spec.dir == simpler.INOUT:
            tensors.append(np.zeros_like(saved))
            outputs[spec.name] = saved
        else:
            tensors.append(np.zeros_like(saved))
            outputs[spec.name] = saved
    assert outputs, f"{name}: no output in the signature {c.signature}"
    res = workers[rt].run(c, tensors, scalars(p))
    for out, want in outputs.items():
        got = res.outputs[out]
        assert got.dtype == want.dtype and got.shape == want.shape, (out, got.dtype, got.shape)
        np.testing.assert_array_equal(got, want, err_msg=f"{rt} {name}: output {out!r}")
