"""bgemm under the scene matrix: C[g] = A[g] @ B[g], tiled.

Per output tile, grid_k gemms (AIC) make partial products and grid_k adds
(AIV) accumulate them into the C tile (the first overwrites it), so a run
has groups * grid_m * grid_n * grid_k * 2 tasks. cfg = {tile, grid_k,
groups} is a control tensor the orchestration reads. The golden is
numpy's batched matmul in float64.
"""
import numpy as np

from simpler.testing import Case, SceneTest


class TestBgemm(SceneTest):
    CALLABLE = "bgemm"
    CASES = (
        Case("single", tile=8, grid_m=1, grid_n=1, grid_k=1, groups=1),
        Case("small", tile=4, grid_m=2, grid_n=3, grid_k=3, groups=2),
        Case("odd_tile", tile=5, grid_m=2, grid_n=1, grid_k=4, groups=3),
        Case("wide", tile=16, grid_m=4, grid_n=4, grid_k=4, groups=2),
    )
    TOLERANCES = {"C": dict(rtol=1e-5, atol=1e-5)}

    def generate_args(self, case):
        rng = case.rng()
        t, g = case.tile, case.groups
        m, n, k = case.grid_m * t, case.grid_n * t, case.grid_k * t
        cfg = np.array([t, case.grid_k, g], np.int64)
        A = rng.uniform(-1, 1, (g, m, k)).astype(np.float32)
        B = rng.uniform(-1, 1, (g, k, n)).astype(np.float32)
        # C is never staged in: whatever it holds must be overwritten.
        C = np.full((g, m, n), np.nan, np.float32)
        return {"cfg": cfg, "A": A, "B": B, "C": C}

    def compute_golden(self, args, case):
        return {"C": np.matmul(args["A"].astype(np.float64), args["B"].astype(np.float64))}

    def check(self, result, args, golden, case):
        tiles = case.groups * case.grid_m * case.grid_n
        assert result.stats.tasks == tiles * case.grid_k * 2
        assert result.stats.edges == tiles * (2 * case.grid_k - 1)
