"""dummy_chain under the scene matrix: stamps ordered only by dummy tasks.

In manual scopes, `gap` dummies come before, between and after `stamps`
stamp tasks, each depending on the task before it. Stamp s writes
log[s] = counter and increments counter, so in chain order the log counts
up from the counter's starting value. Tasks: stamps + (stamps + 1) * gap.
"""
import numpy as np

from simpler.testing import Case, SceneTest


class TestDummyChain(SceneTest):
    CALLABLE = "dummy_chain"
    CASES = (
        Case("default", stamps=8, gap=4, start=0),
        Case("tight", stamps=20, gap=1, start=100),
        Case("sparse", stamps=3, gap=9, start=-5),
        Case("long", stamps=64, gap=16, start=7),
    )

    def generate_args(self, case):
        return {
            "counter": np.array([case.start], np.int64),
            "log": np.full(case.stamps, -99, np.int64),
            "gap": case.gap,
        }

    def compute_golden(self, args, case):
        start = int(args["counter"][0])
        return {
            "counter": np.array([start + case.stamps], np.int64),
            "log": start + np.arange(case.stamps, dtype=np.int64),
        }

    def check(self, result, args, golden, case):
        tasks = case.stamps + (case.stamps + 1) * case.gap
        assert result.stats.tasks == tasks
        assert result.stats.edges == tasks - 1
