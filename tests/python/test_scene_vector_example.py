"""vector_example under the scene matrix: f = (c+1)*(c+2) + c with c = a + b.

Five AIV tasks (c = a + b; d = c + 1; e = c + 2; g = d * e; f = g + c),
each split over `blocks` SPMD blocks. The golden is the formula in numpy,
in f32 like the kernels.
"""
import numpy as np

from simpler.testing import Case, SceneTest


class TestVectorExample(SceneTest):
    CALLABLE = "vector_example"
    CASES = (
        Case("small", n=1000),
        Case("spmd", n=4096, blocks=4),
        # More blocks than the elements divide into evenly, some empty.
        Case("ragged", n=7, blocks=5),
        # f allocated by the binding from the signature (f32[n], n from a).
        Case("alloc", n=300, blocks=2, alloc=True),
        Case("large", n=65536, blocks=8),
    )
    TOLERANCES = {"f": dict(rtol=1e-6, atol=1e-6)}

    def generate_args(self, case):
        rng = case.rng()
        n = case.n
        a = rng.uniform(-4, 4, n).astype(np.float32)
        b = rng.uniform(-4, 4, n).astype(np.float32)
        f = None if case.get("alloc") else np.full(n, np.nan, np.float32)
        return {"a": a, "b": b, "f": f, "blocks": case.get("blocks", 1)}

    def compute_golden(self, args, case):
        c = args["a"] + args["b"]
        one, two = np.float32(1), np.float32(2)
        return {"f": (c + one) * (c + two) + c}

    def check(self, result, args, golden, case):
        assert result.stats.tasks == 5
        assert result.outputs["f"].dtype == np.float32
        if args["f"] is not None:
            assert result.outputs["f"] is args["f"]
