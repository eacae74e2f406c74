"""decoder under the scene matrix: one decode step of an L-layer transformer.

Per layer: RMS norm, the QKV projection (one KV head shared by all NH query
heads), the new token's key and value stored in the layer's paged cache at
position context_lens[b] - 1, attention over the first context_lens[b]
cached tokens, the output projection and residual, RMS norm, the MLP (up,
SiLU, down) and residual. The runtime runs one graph task per layer (or,
with graph=0, the same tasks one by one); the golden is plain float64
numpy over the gathered cache rows. Cache rows outside every context hold
NaN: reading one would show, and the caches are compared too (NaN where
both are).

The replay test decodes 5 steps in a row with SP_CALL_REPLAY_AUTO: each
step appends a token (context_lens + 1), feeds a new hidden state and new
attention scale and norm eps (data scalars), carries the caches over, and
every step matches the golden of that step;
then the first step's inputs, run again, give the first step's output
bit for bit.
"""
import numpy as np
import pytest

import simpler
from simpler.testing import ALL_RUNTIMES, Case, SceneTest

# include/simpler/types.h: the Python package names no replay flags.
SP_CALL_REPLAY_AUTO = 0x4
# sp_run_stats.replay (include/simpler/module.h), as a name: RunStats.replay
# is a string where the package reports it.
REPLAY_NAMES = {0: "fresh", 1: "recorded", 2: "replayed"}


def replay_state(stats):
    v = getattr(stats, "replay", None)
    return REPLAY_NAMES.get(v, v)


def make_inputs(rng, layers, heads, head_dim, ffn, block_size, lens, max_blocks=None, spare=0,
                eps=1e-5, graph=1):
    lens = np.array(lens, np.int32)
    L, B, NH, D, F, bs = layers, len(lens), heads, head_dim, ffn, block_size
    Hd = NH * D
    MB = max_blocks or int(((lens + bs - 1) // bs).max())
    NB = B * MB + spare

    def w(*shape, fan_in):
        return (rng.uniform(-1, 1, shape) / np.sqrt(fan_in)).astype(np.float32)

    kc = np.full((L, NB, bs, D), np.nan, np.float32)
    vc = np.full((L, NB, bs, D), np.nan, np.float32)
    table = rng.permutation(NB)[:B * MB].reshape(B, MB).astype(np.int32)
    for layer in range(L):
        for b in range(B):
            for t in range(int(lens[b]) - 1):
                phys = table[b, t // bs]
                kc[layer, phys, t % bs] = rng.uniform(-1, 1, D)
                vc[layer, phys, t % bs] = rng.uniform(-1, 1, D)
    return {
        "x": rng.uniform(-1, 1, (B, Hd)).astype(np.float32),
        "ln1": rng.uniform(0.8, 1.2, (L, Hd)).astype(np.float32),
        "wqkv": w(L, Hd, Hd + 2 * D, fan_in=Hd),
        "wo": w(L, Hd, Hd, fan_in=Hd),
        "ln2": rng.uniform(0.8, 1.2, (L, Hd)).astype(np.float32),
        "wup": w(L, Hd, F, fan_in=Hd),
        "wdown": w(L, F, Hd, fan_in=F),
        "key_cache": kc,
        "value_cache": vc,
        "block_table": table,
        "context_lens": lens,
        "out": np.zeros((B, Hd), np.float32),
        "scale": float(1.0 / np.sqrt(D)),
        "eps": float(eps),
        "graph": graph,
    }


def golden_step(args):
    """out and the caches after one step, in float64 (caches stored as f32)."""
    kc, vc = args["key_cache"].copy(), args["value_cache"].copy()
    table, lens = args["block_table"], args["context_lens"]
    L, _, bs, D = kc.shape
    B, Hd = args["x"].shape
    NH = Hd // D
    scale = float(np.float32(args["scale"]))
    eps = float(np.float32(args["eps"]))

    def rms(h, wt):
        return h / np.sqrt((h * h).mean(axis=1, keepdims=True) + eps) * wt

    h = args["x"].astype(np.float64)
    for layer in range(L):
        qkv = rms(h, args["ln1"][layer]) @ args["wqkv"][layer].astype(np.float64)
        att = np.empty((B, Hd))
        for b in range(B):
            ctx = int(lens[b])
            p = ctx - 1
            kc[layer, table[b, p // bs], p % bs] = qkv[b, Hd:Hd + D]
            vc[layer, table[b, p // bs], p % bs] = qkv[b, Hd + D:]
            blocks = table[b, :(ctx + bs - 1) // bs]
            K = kc[layer, blocks].reshape(-1, D)[:ctx].astype(np.float64)
            V = vc[layer, blocks].reshape(-1, D)[:ctx].astype(np.float64)
            s = scale * (qkv[b, :Hd].reshape(NH, D) @ K.T)
            e = np.exp(s - s.max(axis=1, keepdims=True))
            att[b] = ((e / e.sum(axis=1, keepdims=True)) @ V).reshape(Hd)
        h = h + att @ args["wo"][layer].astype(np.float64)
        u = rms(h, args["ln2"][layer]) @ args["wup"][layer].astype(np.float64)
        h = h + (u / (1.0 + np.exp(-u))) @ args["wdown"][layer].astype(np.float64)
    return {"out": h, "key_cache": kc, "value_cache": vc}


def expected_tasks(args):
    L = args["ln1"].shape[0]
    B, MB = args["block_table"].shape
    return L * (10 + B * (4 * MB + 1))


TOLERANCES = {
    "out": dict(rtol=1e-4, atol=1e-4),
    "key_cache": dict(rtol=1e-5, atol=1e-5),
    "value_cache": dict(rtol=1e-5, atol=1e-5),
}


class TestDecoder(SceneTest):
    CALLABLE = "decoder"
    CASES = (
        Case("small", layers=2, heads=4, head_dim=16, ffn=128, block_size=4, lens=(5, 9)),
        # Odd sizes, a one-token context, a table wider than any context and
        # spare blocks; the same layers submitted one by one.
        Case("odd", layers=3, heads=3, head_dim=5, ffn=9, block_size=3, lens=(1, 7, 11),
             max_blocks=5, spare=3),
        Case("one_by_one", layers=2, heads=2, head_dim=8, ffn=16, block_size=4, lens=(6, 3),
             graph=0),
        Case("long", layers=4, heads=4, head_dim=16, ffn=64, block_size=16, lens=(200, 33, 1, 64)),
    )
    TOLERANCES = TOLERANCES

    def generate_args(self, case):
        return make_inputs(case.rng(), case.layers, case.heads, case.head_dim, case.ffn,
                           case.block_size, case.lens, max_blocks=case.get("max_blocks"),
                           spare=case.get("spare", 0), graph=case.get("graph", 1))

    def compute_golden(self, args, case):
        return golden_step(args)

    def check(self, result, args, golden, case):
        assert result.stats.tasks == expected_tasks(args)


@pytest.mark.parametrize("runtime", ALL_RUNTIMES)
def test_decode_steps_with_replay(runtime):
    rng = np.random.default_rng(16)
    args = make_inputs(rng, layers=3, heads=4, head_dim=8, ffn=32, block_size=4, lens=(3, 9),
                       max_blocks=4)
    first, recorded = None, False
    cfg = simpler.CallConfig()  # flags is an attribute, not a constructor keyword
    cfg.flags = SP_CALL_REPLAY_AUTO
    with simpler.Worker(runtime=runtime) as w:
        callable_ = simpler.example("decoder")
        for step in range(5):
            if step:
                # A new token, one more of context, and new data scalars:
                # a replay must patch the tensors' addresses and both scalars.
                args["x"] = rng.uniform(-1, 1, args["x"].shape).astype(np.float32)
                args["context_lens"] = args["context_lens"] + 1
                args["out"] = np.zeros_like(args["out"])
                args["scale"] = float(1.0 / np.sqrt(8) * (1.0 + 0.1 * step))
                args["eps"] = 1e-5 * (1 + step)
            inputs = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
            golden = golden_step(inputs)
            result = w.run(callable_, config=cfg, **args)
            assert result.stats.tasks == expected_tasks(args), f"step {step}"
            # Where the runtime says it recorded the first step, every later
            # step (same geometry, new data) must be a replay.
            replay = replay_state(result.stats)
            if step == 0:
                recorded = replay == "recorded"
            elif recorded:
                assert replay == "replayed", f"step {step}: replay={replay}"
            for name, tol in TOLERANCES.items():
                np.testing.assert_allclose(args[name], golden[name], err_msg=f"step {step} {name}",
                                           **tol)
            if first is None:
                first = (inputs, args["out"].copy())
        # The first step again, from its inputs: the same output, bit for bit.
        again = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in first[0].items()}
        w.run(callable_, config=cfg, **again)
        np.testing.assert_array_equal(again["out"], first[1])
