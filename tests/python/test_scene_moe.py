"""moe under the scene matrix: a mixture-of-experts layer, predicated experts.

Per token: router logits x @ w_router + router_bias, its top_k experts
(ties to the lower index), gates the softmax over the chosen logits, and
out = x + sum of gate * (silu(x @ w1[e]) @ w2[e]) over the chosen e;
counts[e] is how many tokens chose e. The runtime runs a router task and
five tasks per expert, each predicated on counts[e] != 0 (predicated=0:
plain tasks; padded=1: the expert MLP kernels compute all T rows); the
golden is float64 numpy per token. A router bias of -100
keeps the last `empty` experts without a token. Tokens whose k-th and
(k+1)-th logits lie within 1e-3 are drawn again, so f32 rounding in the
router cannot choose differently from the golden.
"""
import numpy as np

from simpler.testing import Case, SceneTest


def route(x, w_router, bias, k):
    """The chosen experts (best first) and their gates, per token, in float64."""
    logits = x.astype(np.float64) @ w_router.astype(np.float64) + bias.astype(np.float64)
    chosen = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    top = np.take_along_axis(logits, chosen, axis=1)
    g = np.exp(top - top[:, :1])
    return logits, chosen, g / g.sum(axis=1, keepdims=True)


class TestMoe(SceneTest):
    CALLABLE = "moe"
    CASES = (
        Case("small", tokens=16, hidden=32, ffn=64, experts=4, top_k=2),
        Case("half_empty", tokens=32, hidden=32, ffn=64, experts=8, top_k=2, empty=4),
        Case("top1_odd", tokens=7, hidden=5, ffn=3, experts=5, top_k=1, empty=1),
        Case("unpredicated", tokens=24, hidden=16, ffn=32, experts=6, top_k=2, empty=3,
             predicated=0),
        Case("wide", tokens=64, hidden=64, ffn=128, experts=16, top_k=3),
        # Static shapes: every expert that runs computes all T rows.
        Case("padded", tokens=20, hidden=16, ffn=24, experts=6, top_k=2, empty=2, padded=1),
        Case("padded_unpredicated", tokens=20, hidden=16, ffn=24, experts=6, top_k=2, empty=2,
             padded=1, predicated=0),
    )
    TOLERANCES = {"out": dict(rtol=1e-4, atol=1e-4)}

    def generate_args(self, case):
        rng = case.rng()
        T, Hd, F, E, k = case.tokens, case.hidden, case.ffn, case.experts, case.top_k
        empty = case.get("empty", 0)
        w_router = rng.uniform(-1, 1, (Hd, E)).astype(np.float32)
        bias = rng.uniform(-0.5, 0.5, E).astype(np.float32)
        bias[E - empty:] = -100.0
        x = np.empty((T, Hd), np.float32)
        for t in range(T):
            for _ in range(1000):
                x[t] = rng.uniform(-1, 1, Hd)
                logits = np.sort(route(x[t:t + 1], w_router, bias, k)[0][0])[::-1]
                if k >= E or logits[k - 1] - logits[k] >= 1e-3:
                    break
        return {
            "x": x,
            "w_router": w_router,
            "router_bias": bias,
            "w1": (rng.uniform(-1, 1, (E, Hd, F)) / np.sqrt(Hd)).astype(np.float32),
            "w2": (rng.uniform(-1, 1, (E, F, Hd)) / np.sqrt(F)).astype(np.float32),
            "counts": np.full(E, -7, np.int32),
            "out": np.zeros((T, Hd), np.float32),
            "top_k": k,
            "predicated": case.get("predicated", 1),
            "padded": case.get("padded", 0),
        }

    def compute_golden(self, args, case):
        x = args["x"].astype(np.float64)
        E = args["w_router"].shape[1]
        _, chosen, gates = route(args["x"], args["w_router"], args["router_bias"], args["top_k"])
        out = x.copy()
        for t in range(x.shape[0]):
            for e, g in zip(chosen[t], gates[t]):
                h = x[t] @ args["w1"][e].astype(np.float64)
                out[t] += g * ((h / (1.0 + np.exp(-h))) @ args["w2"][e].astype(np.float64))
        counts = np.bincount(chosen.ravel(), minlength=E).astype(np.int32)
        return {"out": out, "counts": counts}

    def check(self, result, args, golden, case):
        E = args["w_router"].shape[1]
        assert result.stats.tasks == 2 + 5 * E
        empty = case.get("empty", 0)
        assert (golden["counts"][E - empty:] == 0).all()
        # A runtime that reports skipped tasks skips exactly the empty
        # experts' five each, and none without predicates.
        skipped = getattr(result.stats, "skipped", None)
        if skipped is not None and (skipped or not args["predicated"]):
            want = 5 * int((golden["counts"] == 0).sum()) if args["predicated"] else 0
            assert skipped == want
        if case.name == "half_empty":
            assert (golden["counts"] == 0).sum() >= E // 2
