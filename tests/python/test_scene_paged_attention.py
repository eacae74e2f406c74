"""paged_attention under the scene matrix: decode attention over a paged KV cache.

Batch b's keys and values are the first context_lens[b] token rows of the
cache blocks block_table[b, 0], block_table[b, 1], ...; one KV head serves
all H query heads. out[b] = softmax(scale * q[b] @ K_b^T) @ V_b. The
runtime computes it block by block (QK, softmax, PV, an online update, a
final normalize: 4 tasks per block plus 1 per batch); the golden is the
plain softmax in float64 over the gathered keys. Cache rows no context
reaches, and blocks no table names, hold NaN: reading one would show.
"""
import numpy as np

from simpler.testing import Case, SceneTest


class TestPagedAttention(SceneTest):
    CALLABLE = "paged_attention"
    CASES = (
        Case("small", heads=4, head_dim=8, block_size=4, context_lens=(9,)),
        Case("varlen", heads=2, head_dim=16, block_size=8, context_lens=(1, 8, 17, 30)),
        # A table wider than any context and spare cache blocks; an explicit scale.
        Case("spare", heads=3, head_dim=5, block_size=3, context_lens=(4, 2, 7), max_blocks=5,
             spare_blocks=4, scale=0.7),
        Case("long", heads=8, head_dim=32, block_size=16, context_lens=(200, 129, 64, 1)),
    )
    TOLERANCES = {"out": dict(rtol=1e-4, atol=2e-5)}

    def generate_args(self, case):
        rng = case.rng()
        lens = np.array(case.context_lens, np.int32)
        B, H, D, bs = len(lens), case.heads, case.head_dim, case.block_size
        used = (lens + bs - 1) // bs
        MB = case.get("max_blocks", int(used.max()))
        NB = B * MB + case.get("spare_blocks", 0)
        query = rng.uniform(-1, 1, (B, H, D)).astype(np.float32)
        key_cache = np.full((NB, bs, D), np.nan, np.float32)
        value_cache = np.full((NB, bs, D), np.nan, np.float32)
        # Each batch's blocks are scattered over the cache; unused table
        # entries point at a block, too (never read).
        perm = rng.permutation(NB).astype(np.int32)
        block_table = perm[:B * MB].reshape(B, MB).copy()
        for b in range(B):
            for j in range(used[b]):
                rows = min(bs, int(lens[b]) - j * bs)
                phys = block_table[b, j]
                key_cache[phys, :rows] = rng.uniform(-1, 1, (rows, D))
                value_cache[phys, :rows] = rng.uniform(-1, 1, (rows, D))
        scale = case.get("scale", 1.0 / np.sqrt(D))
        return {
            "query": query,
            "key_cache": key_cache,
            "value_cache": value_cache,
            "block_table": block_table,
            "context_lens": lens,
            "out": np.zeros((B, H, D), np.float32),
            "scale": float(scale),
        }

    def compute_golden(self, args, case):
        q = args["query"].astype(np.float64)
        B, H, D = q.shape
        bs = args["key_cache"].shape[1]
        # The kernels take the scale as f32.
        scale = float(np.float32(args["scale"]))
        out = np.empty((B, H, D))
        for b in range(B):
            ctx = int(args["context_lens"][b])
            blocks = args["block_table"][b, :(ctx + bs - 1) // bs]
            K = args["key_cache"][blocks].reshape(-1, D)[:ctx].astype(np.float64)
            V = args["value_cache"][blocks].reshape(-1, D)[:ctx].astype(np.float64)
            s = scale * (q[b] @ K.T)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            out[b] = (p / p.sum(axis=1, keepdims=True)) @ V
        return {"out": out}

    def check(self, result, args, golden, case):
        bs = case.block_size
        blocks = [(int(c) + bs - 1) // bs for c in case.context_lens]
        assert result.stats.tasks == sum(4 * n + 1 for n in blocks)
        assert result.stats.edges == sum(5 * n for n in blocks)
