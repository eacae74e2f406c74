"""Worker.device_array: a DeviceArray stays in device memory across runs and
is used in place as a run argument (SP_TENSOR_DEVICE: no copy in or back),
mixed with numpy arguments, on both runtimes; .copy_from / .to_numpy move
data; freeing one a submitted run uses is refused (SP_EBUSY) until the run
is waited for; a freed one is refused by name."""
import os

import numpy as np
import pytest

import simpler

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")


@pytest.fixture(scope="module")
def axpy():
    return simpler.build_callable(
        os.path.join(KERNELS, "axpy_orch.c"),
        kernels=[("axpy_scale", "aiv", os.path.join(KERNELS, "axpy_kernels.c")),
                 ("axpy_add", "aiv", os.path.join(KERNELS, "axpy_kernels.c"))],
        signature="x:in:f32[n],y:inout:f32[n],alpha:scalar:f32", name="axpy")


@pytest.fixture(scope="module", params=("hbg", "tmr"))
def worker(request):
    with simpler.Worker(runtime=request.param) as w:
        yield w


def test_in_place_across_runs(worker, axpy):
    n = 64
    rng = np.random.default_rng(1)
    x = rng.random(n, dtype=np.float32)
    y0 = rng.random(n, dtype=np.float32)
    dy = worker.device_array((n,), "f32")
    assert dy.shape == (n,) and dy.dtype == "f32" and dy.nbytes == 4 * n
    dy.copy_from(y0)
    dx = worker.device_array(n, "f32")
    dx.copy_from(x)
    want = y0.copy()
    for r in range(20):
        cfg = simpler.CallConfig(replay="auto" if r % 2 else "off")
        worker.run(axpy, x=dx if r % 3 else x, y=dy, alpha=0.5, config=cfg)
        want = want + np.float32(0.5) * x
    np.testing.assert_allclose(dy.to_numpy(), want, rtol=1e-5)
    assert (dx.to_numpy() == x).all()
    dx.free()
    dy.free()


def test_refusals(worker, axpy):
    n = 16
    x = np.ones(n, np.float32)
    d = worker.device_array(n, "f32")
    d.copy_from(np.zeros(n, np.float32))
    with pytest.raises(simpler.Error) as e:
        d.copy_from(np.zeros(n + 1, np.float32))
    assert "bytes" in str(e.value)
    h = worker.submit(axpy, x=x, y=d, alpha=1.0)
    with pytest.raises(simpler.Error) as e:
        d.free()
    assert simpler.status_name(e.value.status) == "SP_EBUSY"
    assert "not yet waited for" in str(e.value)
    h.wait()
    np.testing.assert_array_equal(d.to_numpy(), np.ones(n, np.float32))
    d.free()
    with pytest.raises(simpler.Error, match="freed"):
        d.to_numpy()
    with pytest.raises(simpler.Error, match="freed"):
        worker.run(axpy, x=x, y=d, alpha=1.0)
    # the worker still runs
    y = np.zeros(n, np.float32)
    worker.run(axpy, x=x, y=y, alpha=2.0)
    np.testing.assert_array_equal(y, np.full(n, 2.0, np.float32))
