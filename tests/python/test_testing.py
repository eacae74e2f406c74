"""simpler.testing itself: the case matrix, its ids, one Worker per runtime
per class, and a wrong golden failing with a message that names the case,
runtime, geometry and output."""
import os
import subprocess
import sys

import numpy as np
import pytest

from simpler.testing import Case, Geometry, SceneTest, assert_outputs


def test_case_params_and_geometry_ids():
    c = Case("small", n=8, blocks=2, runtimes=("tmr",))
    assert (c.n, c["blocks"], c.get("missing", 5), "n" in c) == (8, 2, 5, True)
    assert c.runtimes == ("tmr",)
    with pytest.raises(AttributeError, match="no parameter 'nope'"):
        c.nope
    assert Geometry(2, 2).id == "c2s2"
    # The same case draws the same numbers; another case others.
    assert np.array_equal(c.rng().random(4), Case("small", n=1).rng().random(4))
    assert not np.array_equal(c.rng().random(4), Case("other").rng().random(4))


def test_repeated_case_names_are_refused():
    with pytest.raises(ValueError, match="case names repeat"):
        type("TestDup", (SceneTest,), {"CASES": (Case("a"), Case("a"))})


def test_assert_outputs_names_the_output():
    out = {"f": np.array([1.0, 2.0], np.float32), "n": np.array([3], np.int64)}
    assert_outputs(out, {"f": [1.0, 2.0000001]}, {"f": dict(rtol=1e-6)}, "here")
    with pytest.raises(AssertionError, match="here: output 'n'"):
        assert_outputs(out, {"n": [4]}, where="here")
    with pytest.raises(AssertionError, match="output 'f'"):
        assert_outputs(out, {"f": [1.0, 2.0000001]})  # exact without a tolerance
    with pytest.raises(AssertionError, match="output 'g': the run returned no such output"):
        assert_outputs(out, {"g": [0]})
    with pytest.raises(AssertionError, match=r"output 'f': shape \(2,\), golden \(3,\)"):
        assert_outputs(out, {"f": [1, 2, 3]}, {"f": dict(atol=1)})


class _Wrong(SceneTest):
    """vector_example with a golden off by one (not collected: no Test prefix)."""

    CALLABLE = "vector_example"
    CASES = (Case("tiny", n=5),)
    TOLERANCES = {"f": dict(rtol=1e-6)}

    def generate_args(self, case):
        return {"a": np.full(case.n, 2, np.float32), "b": np.full(case.n, 3, np.float32),
                "f": np.zeros(case.n, np.float32), "blocks": 1}

    def compute_golden(self, args, case):
        return {"f": np.full(case.n, 48, np.float32)}  # the run makes 47


def test_wrong_golden_fails_naming_where_direct():
    with pytest.raises(AssertionError,
                       match="_Wrong: case 'tiny' runtime tmr geometry c2s2: output 'f'"):
        _Wrong().run_scene(_Wrong.CASES[0], "tmr", Geometry(2, 2))


def test_failed_run_keeps_its_class_and_says_where():
    import simpler
    from simpler.testing import _Workers

    class _Blocks(_Wrong):
        CASES = (Case("zero", n=4, blocks=0), Case("one", n=4, blocks=1))

        def generate_args(self, case):
            return dict(super().generate_args(case), blocks=case.blocks)

        def compute_golden(self, args, case):
            return {"f": np.full(case.n, 47, np.float32)}

    workers = _Workers(_Blocks)
    try:
        with pytest.raises(simpler.Error) as info:
            _Blocks().run_scene(_Blocks.CASES[0], "hbg", Geometry(1, 1), workers)
        assert "_Blocks: case 'zero' runtime hbg geometry c1s1" in info.value.__notes__
        # The same Worker runs the next case.
        _Blocks().run_scene(_Blocks.CASES[1], "hbg", Geometry(1, 1), workers)
    finally:
        workers.close()


class _Rounds(SceneTest):
    """vector_example three rounds a case, replay on (not collected)."""

    CALLABLE = "vector_example"
    CASES = (Case("r", n=64),)
    TOLERANCES = {"f": dict(rtol=1e-6)}
    CONFIG = {"replay": "auto"}
    ROUNDS = 3

    def __init__(self):
        self.seen = []

    def generate_args(self, case):
        rng = case.rng()
        return {"a": rng.random(case.n, np.float32), "b": rng.random(case.n, np.float32),
                "f": np.zeros(case.n, np.float32), "blocks": 1}

    def compute_golden(self, args, case):
        c = args["a"] + args["b"]
        return {"f": (c + 1) * (c + 2) + c}

    def check(self, result, args, golden, case):
        assert case.round == self.round
        self.seen.append((case.round, args["a"].copy(), result.stats.replay))


def test_rounds_run_each_case_on_new_data_and_check_each():
    t = _Rounds()
    result = t.run_scene(_Rounds.CASES[0], "hbg", Geometry(1, 1))
    assert [r for r, _, _ in t.seen] == [0, 1, 2] and _Rounds.CASES[0].round == 0
    # round 0 draws what a one-round case draws; the later rounds other data
    assert np.array_equal(t.seen[0][1], _Rounds.CASES[0].rng().random(64, np.float32))
    assert not np.array_equal(t.seen[0][1], t.seen[1][1])
    assert not np.array_equal(t.seen[1][1], t.seen[2][1])
    replays = [p for _, _, p in t.seen]
    assert result.stats.replay == replays[-1]
    # With a runtime that records, the first round records and the rest
    # replay; one that does not yet runs every round fresh.
    assert replays in (["recorded", "replayed", "replayed"], ["fresh"] * 3), replays

    class _Bad(_Rounds):
        def compute_golden(self, args, case):
            golden = super().compute_golden(args, case)
            if case.round == 2:
                golden["f"] = golden["f"] + 1
            return golden

    with pytest.raises(AssertionError, match="_Bad: case 'r' runtime tmr geometry c1s1 "
                                             "round 2: output 'f'"):
        _Bad().run_scene(_Rounds.CASES[0], "tmr", Geometry(1, 1))
    with pytest.raises(ValueError, match="ROUNDS is 0"):
        type("_Zero", (_Rounds,), {"ROUNDS": 0})().run_scene(_Rounds.CASES[0], "hbg", (1, 1))


SCENE = '''
import os
import numpy as np
import simpler
from simpler.testing import Case, SceneTest

LOG = os.environ["SCENE_LOG"]


def note(line):
    with open(LOG, "a") as f:
        f.write(line + "\\n")


class Counted:
    def __init__(self, w):
        self.w = w

    def run(self, *a, **k):
        note("run " + self.w.runtime)
        return self.w.run(*a, **k)

    def close(self):
        note("close " + self.w.runtime)
        self.w.close()


class TestTiny(SceneTest):
    CALLABLE = "vector_example"
    CASES = (Case("good", n=4), Case("bad", n=6), Case("live", n=3, runtimes=("tmr",)))

    @classmethod
    def open_worker(cls, runtime):
        note("open " + runtime)
        return Counted(super().open_worker(runtime))

    def generate_args(self, case):
        return {"a": np.full(case.n, 2, np.float32), "b": np.full(case.n, 3, np.float32),
                "f": np.zeros(case.n, np.float32), "blocks": 1}

    def compute_golden(self, args, case):
        return {"f": np.full(case.n, 47 if case.name != "bad" else 46, np.float32)}


def test_after():
    note("after")
'''


def test_matrix_ids_workers_and_failure_message(tmp_path):
    (tmp_path / "test_tiny_scene.py").write_text(SCENE)
    log = tmp_path / "log.txt"
    env = dict(os.environ, SCENE_LOG=str(log))
    collect = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only",
                              "-p", "no:cacheprovider", "test_tiny_scene.py"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    ids = sorted(line.split("[")[1].rstrip("]") for line in collect.stdout.splitlines()
                 if "test_scene[" in line)
    want = sorted([f"{rt}-{g}-{c}" for rt in ("hbg", "tmr") for g in ("c1s1", "c2s2")
                   for c in ("good", "bad")] + ["tmr-c1s1-live", "tmr-c2s2-live"])
    assert ids == want, collect.stdout + collect.stderr

    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "test_tiny_scene.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    text = run.stdout + run.stderr
    assert run.returncode == 1, text
    assert "4 failed, 7 passed" in text, text
    for rt in ("hbg", "tmr"):
        for g in ("c1s1", "c2s2"):
            assert f"test_scene[{rt}-{g}-bad]" in text, text
            assert f"TestTiny: case 'bad' runtime {rt} geometry {g}: output 'f'" in text, text
    assert "'good'" not in text and "'live'" not in text
    # One Worker per runtime for the whole class, both closed before the
    # module's next test, after all ten runs.
    events = log.read_text().splitlines()
    assert events.count("open hbg") == 1 and events.count("open tmr") == 1, events
    assert events.count("close hbg") == 1 and events.count("close tmr") == 1, events
    assert events.count("run hbg") == 4 and events.count("run tmr") == 6, events
    last_run = max(i for i, e in enumerate(events) if e.startswith("run "))
    first_close = min(i for i, e in enumerate(events) if e.startswith("close "))
    assert last_run < first_close < events.index("after"), events
