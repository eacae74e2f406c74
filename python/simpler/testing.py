"""Scene tests: one small pytest file per workload (docs/USAGE.md "Python").

A scene test is a case matrix, cases x runtimes x geometries, over one
callable. The test class says how to make the arguments of a case and how
to compute the expected outputs in numpy; each combination becomes one
pytest case with an id like ``hbg-c2s2-small``::

    import numpy as np
    from simpler.testing import SceneTest, Case

    class TestVectorExample(SceneTest):
        CALLABLE = "vector_example"          # example name, Callable, or a function
        CASES = (Case("small", n=1000), Case("spmd", n=4096, blocks=4))
        TOLERANCES = {"f": dict(atol=1e-6, rtol=1e-6)}   # per output; default exact

        def generate_args(self, case):
            rng = case.rng()
            return {"a": rng.random(case.n, np.float32), "b": ...,
                    "f": np.zeros(case.n, np.float32), "blocks": case.get("blocks", 1)}

        def compute_golden(self, args, case):
            c = args["a"] + args["b"]
            return {"f": (c + 1) * (c + 2) + c}

Every runtime of RUNTIMES gets one Worker per test class, opened on the
first case that needs it with the largest geometry of GEOMETRIES (plus
WORKER_OPTIONS) and closed when the class is done; a case runs with
CallConfig(clusters, sched_threads) of its geometry (plus CONFIG and the
case's ``config``). The arguments are passed by name (the callable's
signature names). compute_golden gets a copy of the arguments taken before
the run, so an INOUT input still holds what the run started from. Every
output the golden names is compared with numpy.testing (assert_allclose
with its TOLERANCES entry, else assert_array_equal), and a mismatch names
the case, runtime, geometry and output. An optional
``check(self, result, args, golden, case)`` adds asserts of its own (task
counts, say); ``self.runtime`` and ``self.geometry`` say where it ran.

ROUNDS (default 1) runs every case that many times on the same Worker,
each round on arguments of its own: generate_args gets the case with
``case.round`` set (0, 1, ...), and ``case.rng()`` draws other data in each
round. Every round is checked (``self.round`` says which). With
``CONFIG = {"replay": "auto"}`` the first round records the graph and the
later ones replay it, so a case checks that a replay patched in the new
arrays and data (``self.check`` sees ``result.stats.replay``).
"""
import copy
import zlib
from typing import NamedTuple

import numpy as np
import pytest

import simpler

__all__ = ["SceneTest", "Case", "Geometry", "ALL_RUNTIMES"]

ALL_RUNTIMES = ("hbg", "tmr")


class Geometry(NamedTuple):
    """A run's geometry: clusters and scheduler threads (0: the device's)."""

    clusters: int = 1
    sched_threads: int = 1

    @property
    def id(self):
        return f"c{self.clusters}s{self.sched_threads}"

    def __str__(self):
        return self.id


DEFAULT_GEOMETRIES = (Geometry(1, 1), Geometry(2, 2))


class Case:
    """One named set of parameters, read as ``case.n`` or ``case["n"]``.

    runtimes / geometries restrict the case to some of the class's (a case
    that reads a kernel's output mid-run is tmr only); config holds extra
    CallConfig fields for its runs.
    """

    def __init__(self, name, *, runtimes=None, geometries=None, config=None, **params):
        if not name or not isinstance(name, str):
            raise ValueError("a Case needs a name")
        self.name = name
        self.round = 0  # SceneTest.ROUNDS: which run of the case this is
        self.params = dict(params)
        self.runtimes = None if runtimes is None else tuple(runtimes)
        self.geometries = None if geometries is None else tuple(Geometry(*g) for g in geometries)
        self.config = dict(config or {})

    def __getattr__(self, key):
        params = self.__dict__.get("params", {})
        if key in params:
            return params[key]
        raise AttributeError(f"case '{self.__dict__.get('name')}' has no parameter '{key}'")

    def __getitem__(self, key):
        return self.params[key]

    def __contains__(self, key):
        return key in self.params

    def get(self, key, default=None):
        return self.params.get(key, default)

    def rng(self):
        """A numpy Generator seeded from the case's name, its `seed` parameter
        and its round (round 0 draws what a case of one round draws)."""
        seed = zlib.crc32(self.name.encode()) ^ int(self.params.get("seed", 0))
        return np.random.default_rng(seed if not self.round else (seed, self.round))

    def for_round(self, r):
        """This case in round `r` (a copy; the parameters are shared)."""
        c = copy.copy(self)
        c.round = r
        return c

    def __repr__(self):
        items = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"Case({self.name!r}{items})"


def _copy_args(args):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}


def _where(cls_name, case, runtime, geometry):
    return f"{cls_name}: case '{case.name}' runtime {runtime} geometry {geometry.id}"


def assert_outputs(outputs, golden, tolerances=None, where=""):
    """Compare every output named in `golden` with numpy.testing.

    outputs: name -> array (what the run wrote); tolerances: name ->
    assert_allclose keywords (atol, rtol, equal_nan), exact when absent.
    A failure's message starts with `where` and names the output.
    """
    __tracebackhide__ = True  # pytest: show the assertion, not this frame
    tolerances = tolerances or {}
    for name, expect in golden.items():
        prefix = f"{where}: output '{name}'" if where else f"output '{name}'"
        if name not in outputs:
            raise AssertionError(f"{prefix}: the run returned no such output "
                                 f"(it has {sorted(map(str, outputs))})")
        actual = np.asarray(outputs[name])
        expect = np.asarray(expect)
        if actual.shape != expect.shape:
            raise AssertionError(f"{prefix}: shape {actual.shape}, golden {expect.shape}")
        tol = tolerances.get(name)
        msg = f"{prefix} (x: the run, y: the golden)"
        if tol is None:
            np.testing.assert_array_equal(actual, expect, err_msg=msg)
        else:
            np.testing.assert_allclose(actual, expect, err_msg=msg, **tol)


def _scene_params(cls):
    runtimes = tuple(cls.RUNTIMES)
    geometries = tuple(Geometry(*g) for g in cls.GEOMETRIES)
    out = []
    for runtime in runtimes:
        for geometry in geometries:
            for case in cls.CASES:
                if case.runtimes is not None and runtime not in case.runtimes:
                    continue
                if case.geometries is not None and geometry not in case.geometries:
                    continue
                out.append(pytest.param(case, runtime, geometry,
                                        id=f"{runtime}-{geometry.id}-{case.name}"))
    return out


def _make_test():
    # A fresh function per class: pytest's marks live on the function object.
    def test_scene(self, _scene_workers, case, runtime, geometry):
        __tracebackhide__ = True
        self.run_scene(case, runtime, geometry, _scene_workers)

    return test_scene


class SceneTest:
    """Base class of a scene test (see the module's docstring)."""

    CALLABLE = None
    RUNTIMES = ALL_RUNTIMES
    GEOMETRIES = DEFAULT_GEOMETRIES
    CASES = ()
    TOLERANCES = {}
    WORKER_OPTIONS = {}
    CONFIG = {}
    ROUNDS = 1

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if not cls.CASES:
            return  # an intermediate base: no matrix of its own
        names = [c.name for c in cls.CASES]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"{cls.__name__}: case names repeat: {sorted(dup)}")
        # A runtime is a name the library knows or a module path ('/').
        unknown = [r for r in cls.RUNTIMES if r not in ALL_RUNTIMES and "/" not in r]
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown runtimes {unknown}")
        cls._scene_callable = None
        cls.test_scene = pytest.mark.parametrize("case,runtime,geometry",
                                                 _scene_params(cls))(_make_test())

    # ---- what a scene test provides ----------------------------------------
    def generate_args(self, case):
        """name -> tensor (numpy array, or None for an output to allocate) or scalar."""
        raise NotImplementedError(f"{type(self).__name__} must define generate_args(case)")

    def compute_golden(self, args, case):
        """name -> expected contents of that output, computed in numpy."""
        raise NotImplementedError(f"{type(self).__name__} must define compute_golden(args, case)")

    def check(self, result, args, golden, case):
        """Extra asserts after the outputs matched (override; default none)."""

    # ---- the machinery -------------------------------------------------------
    @classmethod
    def get_callable(cls):
        """The class's Callable, loaded once."""
        if cls.__dict__.get("_scene_callable") is None:
            c = cls.CALLABLE
            if c is None:
                raise TypeError(f"{cls.__name__}.CALLABLE is not set")
            if isinstance(c, str):
                c = simpler.example(c)
            elif callable(c):
                c = c()
            cls._scene_callable = c
        return cls._scene_callable

    @classmethod
    def open_worker(cls, runtime):
        """A Worker for `runtime` with room for the largest geometry."""
        geometries = [Geometry(*g) for g in cls.GEOMETRIES]
        opts = dict(clusters=max(g.clusters for g in geometries),
                    sched_threads=max(g.sched_threads for g in geometries))
        opts.update(cls.WORKER_OPTIONS)
        return simpler.Worker(runtime=runtime, **opts)

    @pytest.fixture(scope="class")
    def _scene_workers(self):
        workers = _Workers(type(self))
        try:
            yield workers
        finally:
            workers.close()

    def run_scene(self, case, runtime, geometry, workers=None):
        """Run one case on `runtime` with `geometry`, ROUNDS times, and check
        every round; the last round's result."""
        __tracebackhide__ = True
        cls = type(self)
        geometry = Geometry(*geometry)
        self.runtime, self.geometry = runtime, geometry
        rounds = int(cls.ROUNDS)
        if rounds < 1:
            raise ValueError(f"{cls.__name__}.ROUNDS is {cls.ROUNDS}; at least 1")
        own = workers is None
        if own:
            workers = _Workers(cls)
        try:
            result = None
            for r in range(rounds):
                self.round = r
                result = self._run_round(case.for_round(r) if r else case, runtime, geometry,
                                         workers, rounds)
        finally:
            if own:
                workers.close()
        return result

    def _run_round(self, case, runtime, geometry, workers, rounds):
        __tracebackhide__ = True
        cls = type(self)
        where = _where(cls.__name__, case, runtime, geometry)
        if rounds > 1:
            where += f" round {case.round}"
        args = self.generate_args(case)
        if not isinstance(args, dict):
            raise TypeError(f"{where}: generate_args must return a dict of name -> argument")
        golden = self.compute_golden(_copy_args(args), case)
        if not isinstance(golden, dict) or not golden:
            raise TypeError(f"{where}: compute_golden must return a non-empty dict name -> array")
        try:
            worker = workers.get(runtime)
            cfg = dict(cls.CONFIG)
            cfg.update(case.config)
            cfg.update(clusters=geometry.clusters, sched_threads=geometry.sched_threads)
            result = worker.run(cls.get_callable(), config=simpler.CallConfig(**cfg), **args)
        except Exception as e:
            if hasattr(e, "add_note"):  # Python 3.11: say where, keep the class
                e.add_note(where)
            raise
        outputs = dict(args)
        outputs.update(result.outputs)
        assert_outputs(outputs, golden, cls.TOLERANCES, where)
        self.check(result, args, golden, case)
        return result


class _Workers:
    """The Workers of one test class, one per runtime, opened on first use."""

    def __init__(self, cls):
        self.cls = cls
        self.open = {}

    def get(self, runtime):
        w = self.open.get(runtime)
        if w is None:
            w = self.open[runtime] = self.cls.open_worker(runtime)
        return w

    def close(self):
        workers, self.open = self.open, {}
        for w in workers.values():
            w.close()
