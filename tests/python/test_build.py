"""simpler.build_callable: C sources -> a Callable, cached by content hash
(hits not recompiled, an edited #include'd header or source rebuilds), a
compile error raised as CompileError with the compiler's message."""
import os
import shutil

import numpy as np
import pytest

import simpler
from simpler import build

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
AXPY_SIG = "x:in:f32[n],y:inout:f32[n],alpha:scalar:f32"


def axpy(src, cache, **kw):
    return simpler.build_callable(
        os.path.join(src, "axpy_orch.c"),
        kernels=[("axpy_scale", "aiv", os.path.join(src, "axpy_kernels.c")),
                 ("axpy_add", "aiv", os.path.join(src, "axpy_kernels.c"))],
        signature=AXPY_SIG, name="axpy", cache_dir=cache, **kw)


@pytest.fixture
def src(tmp_path):
    """A private copy of tests/python/kernels (the tests edit it)."""
    d = tmp_path / "src"
    shutil.copytree(KERNELS, d)
    return str(d)


def run_axpy(c, runtime="hbg"):
    x = np.arange(32, dtype=np.float32)
    y = np.full(32, 2.0, dtype=np.float32)
    with simpler.Worker(runtime=runtime) as w:
        w.run(c, x=x, y=y, alpha=3.0)
    return x, y


def test_builds_what_it_was_asked_for(src, tmp_path):
    c = axpy(src, tmp_path / "cache")
    assert isinstance(c, simpler.Callable)
    assert c.entry == "orchestration" and c.signature == AXPY_SIG
    assert [(k.func_id, k.core, k.entry) for k in c.kernels] == [
        (0, "aiv", "axpy_scale"), (1, "aiv", "axpy_add")]


@pytest.mark.parametrize("runtime", ["hbg", "tmr"])
def test_built_callable_runs(src, tmp_path, runtime):
    x, y = run_axpy(axpy(src, tmp_path / "cache"), runtime)
    np.testing.assert_array_equal(y, 3.0 * x + 2.0)


def test_cache_hit_is_not_recompiled(src, tmp_path):
    cache = tmp_path / "cache"
    before = build.compile_count
    first = axpy(src, cache)
    assert build.compile_count == before + 2  # the orchestration, one kernel source
    entries = sorted(os.listdir(cache))
    assert any(e.endswith(".spc") for e in entries)
    assert not any(e.startswith(".") for e in entries)  # no temporary left behind
    spc = [os.path.join(cache, e) for e in entries if e.endswith(".spc")][0]
    mtime = os.stat(spc).st_mtime_ns
    second = axpy(src, cache)
    assert build.compile_count == before + 2
    assert second.blob == first.blob
    assert os.stat(spc).st_mtime_ns == mtime


def test_edited_header_rebuilds(src, tmp_path):
    cache = tmp_path / "cache"
    first = axpy(src, cache)
    count = build.compile_count
    header = os.path.join(src, "axpy_common.h")
    text = open(header).read().replace("0x00000000u", "0x3f800000u")  # bias 1.0f
    with open(header, "w") as f:
        f.write(text)
    second = axpy(src, cache)
    assert build.compile_count == count + 2
    assert second.blob != first.blob
    # Built once more, the edited header's entry is a hit.
    third = axpy(src, cache)
    assert build.compile_count == count + 2 and third.blob == second.blob
    x, y = run_axpy(second)
    np.testing.assert_array_equal(y, 3.0 * x + 2.0 + 1.0)


def test_edited_source_and_flags_are_new_keys(src, tmp_path):
    cache = tmp_path / "cache"
    axpy(src, cache)
    count = build.compile_count
    path = os.path.join(src, "axpy_kernels.c")
    with open(path, "a") as f:
        f.write("\n/* edited */\n")
    axpy(src, cache)
    assert build.compile_count == count + 2
    axpy(src, cache, cflags=["-DAXPY_UNUSED=1"])
    assert build.compile_count == count + 4


def test_damaged_cache_entry_rebuilds(src, tmp_path):
    cache = tmp_path / "cache"
    first = axpy(src, cache)
    spc = [os.path.join(cache, e) for e in os.listdir(cache) if e.endswith(".spc")][0]
    with open(spc, "r+b") as f:
        f.truncate(100)
    count = build.compile_count
    again = axpy(src, cache)
    assert build.compile_count == count + 2 and again.blob == first.blob


def test_compile_error_carries_the_compiler_message(tmp_path):
    bad = tmp_path / "bad_orch.c"
    bad.write_text('#include "simpler/orchestration.h"\n'
                   "SP_ORCHESTRATION(orchestration) { this is not C; }\n")
    with pytest.raises(simpler.CompileError) as ei:
        simpler.build_callable(bad, cache_dir=tmp_path / "cache")
    e = ei.value
    assert isinstance(e, simpler.ArgumentError) and e.status == -1
    assert "bad_orch.c:2" in e.message and "error" in e.message
    assert os.listdir(tmp_path / "cache") == []  # nothing half-built left


def test_missing_header_is_a_compile_error(src, tmp_path):
    os.remove(os.path.join(src, "axpy_common.h"))
    with pytest.raises(simpler.CompileError, match="axpy_common.h"):
        axpy(src, tmp_path / "cache")


def test_bad_requests_are_argument_errors(src, tmp_path):
    orch = os.path.join(src, "axpy_orch.c")
    with pytest.raises(simpler.InvalError, match="not found"):
        simpler.build_callable(tmp_path / "nope.c", cache_dir=tmp_path)
    with pytest.raises(simpler.InvalError, match="core"):
        simpler.build_callable(orch, kernels=[("axpy_scale", "gpu", orch)], cache_dir=tmp_path)
    with pytest.raises(simpler.InvalError, match="C identifier"):
        simpler.build_callable(orch, kernels=[("not-a-name", "aiv", orch)], cache_dir=tmp_path)
    with pytest.raises(simpler.InvalError, match="not found"):
        simpler.build_callable(orch, cc="no-such-compiler-here", cache_dir=tmp_path)


def test_cache_dir_from_the_environment(src, tmp_path, monkeypatch):
    env_cache = tmp_path / "from_env"
    monkeypatch.setenv("SIMPLER_CACHE_DIR", str(env_cache))
    assert build.cache_dir() == str(env_cache)
    axpy(src, None)
    assert any(n.endswith(".spc") for n in os.listdir(env_cache))
    monkeypatch.delenv("SIMPLER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert build.cache_dir() == str(tmp_path / "xdg" / "simpler")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert build.cache_dir() == str(tmp_path / "home" / ".cache" / "simpler")
    assert build.cache_dir(tmp_path / "explicit") == str(tmp_path / "explicit")


def test_paths():
    assert os.path.isfile(os.path.join(simpler.include_dir(), "simpler", "kernel.h"))
    assert os.path.isfile(os.path.join(simpler.examples_dir(), "vector_example.spc"))
