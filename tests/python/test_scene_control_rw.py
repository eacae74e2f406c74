"""control_rw under the scene matrix: control values both ways.

The orchestration reads params = {k, offset, nrep, readback}, writes
coef = {k, offset} into a tensor, then y = x * k + offset (affine), counts
y > 0 (count), adds 1 to y nrep times (inc) and records info = {count,
nrep}. With readback = 1 it reads the count back mid-run and takes
nrep = 1 + count % 3: only tmr runs the orchestration alongside the
device, so those cases are tmr only. x holds integers as f32, so every
value is exact.
"""
import numpy as np

from simpler.testing import Case, SceneTest


class TestControlRw(SceneTest):
    CALLABLE = "control_rw"
    CASES = (
        Case("default", n=256, k=3, offset=-7, nrep=2),
        Case("no_inc", n=100, k=-2, offset=5, nrep=0),
        Case("many_inc", n=33, k=1, offset=0, nrep=9),
        Case("large", n=8192, k=-4, offset=13, nrep=3),
        Case("readback", n=300, k=3, offset=-7, readback=1, runtimes=("tmr",)),
        Case("readback_neg", n=50, k=-5, offset=11, readback=1, runtimes=("tmr",)),
    )

    def generate_args(self, case):
        rng = case.rng()
        n = case.n
        x = rng.integers(-50, 51, n).astype(np.float32)
        params = np.array([case.k, case.offset, case.get("nrep", 0), case.get("readback", 0)],
                          np.int64)
        return {
            "params": params,
            "x": x,
            "y": np.full(n, np.nan, np.float32),
            "info": np.full(2, -1, np.int64),
        }

    def compute_golden(self, args, case):
        k, offset, nrep, readback = (int(v) for v in args["params"])
        affine = args["x"].astype(np.float64) * k + offset
        count = int(np.count_nonzero(affine > 0))
        if readback:
            nrep = 1 + count % 3
        return {
            "y": (affine + nrep).astype(np.float32),
            "info": np.array([count, nrep], np.int64),
        }

    def check(self, result, args, golden, case):
        assert result.stats.tasks == 3 + int(golden["info"][1])
