"""matmul_diamond under the scene matrix: F = exp(b @ W1 + b @ W2), b = sqrt(log A).

Four tasks in a diamond: sqrt(log) on AIV, two independent matmuls on AIC,
exp of their sum on AIV. The golden is the formula in float64; the kernels
accumulate in f32, hence the relative tolerance.
"""
import numpy as np

from simpler.testing import Case, SceneTest


class TestMatmulDiamond(SceneTest):
    CALLABLE = "matmul_diamond"
    CASES = (
        Case("one", n=1),
        Case("small", n=16),
        Case("odd", n=37),
        Case("large", n=96),
    )
    TOLERANCES = {"F": dict(rtol=2e-5, atol=0)}

    def generate_args(self, case):
        rng = case.rng()
        n = case.n
        # A > 1 so that log A > 0 and its square root is real.
        A = rng.uniform(1.5, 50.0, (n, n)).astype(np.float32)
        W1 = rng.uniform(-1.0, 1.0, (n, n)).astype(np.float32) / np.float32(n)
        W2 = rng.uniform(-1.0, 1.0, (n, n)).astype(np.float32) / np.float32(n)
        return {"A": A, "W1": W1, "W2": W2, "F": np.zeros((n, n), np.float32)}

    def compute_golden(self, args, case):
        A, W1, W2 = (args[k].astype(np.float64) for k in ("A", "W1", "W2"))
        b = np.sqrt(np.log(A))
        return {"F": np.exp(b @ W1 + b @ W2)}

    def check(self, result, args, golden, case):
        assert result.stats.tasks == 4
        assert result.stats.edges == 4
