"""DLPack (issue 15): an object that offers only __dlpack__ /
__dlpack_device__ (no buffer protocol) is accepted as an input and as an
output tensor, without a copy: the run reads and writes the producer's own
memory. Outputs the binding allocates (None for a signature-declared
output) export __dlpack__ in turn, sharing their memory with the consumer.

Both runtimes, on vector_example: f = (c + 1) * (c + 2) + c, c = a + b.
"""
import numpy as np
import pytest

import simpler

N = 1000
RUNTIMES = ("hbg", "tmr")


class DLPackOnly:
    """A tensor from another framework, as the binding sees it: __dlpack__
    and __dlpack_device__ over a numpy array's memory, and nothing else (no
    buffer protocol, no __array__)."""

    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


# An output through DLPack: numpy 1.24's from_dlpack marks every array it
# imports read-only (DLPack before 1.0 cannot say whether the producer
# allows writes); args.c writes the producer's memory as it was handed out.


def golden(a, b):
    c = a + b
    return (c + 1) * (c + 2) + c


def inputs(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(N).astype(np.float32),
            rng.standard_normal(N).astype(np.float32))


@pytest.fixture(scope="module", params=RUNTIMES)
def worker(request):
    with simpler.Worker(runtime=request.param) as w:
        yield w


def test_wrapper_has_no_buffer_protocol():
    # The premise of the other tests: the binding cannot take the memory
    # through the buffer protocol, only through __dlpack__.
    with pytest.raises(TypeError):
        memoryview(DLPackOnly(np.zeros(4, dtype=np.float32)))


def test_dlpack_inputs(worker, vec):
    a, b = inputs(1)
    f = np.zeros(N, dtype=np.float32)
    r = worker.run(vec, (DLPackOnly(a), DLPackOnly(b), f), (1,))
    np.testing.assert_allclose(f, golden(a, b), rtol=1e-6, atol=1e-6)
    assert r.outputs["f"] is f


def test_dlpack_output_written_in_place(worker, vec):
    a, b = inputs(2)
    f = np.zeros(N, dtype=np.float32)
    out = DLPackOnly(f)
    address = f.__array_interface__["data"][0]
    r = worker.run(vec, (a, b, out), (1,))
    # Zero copy: the result is in the producer's array itself, which did
    # not move.
    np.testing.assert_allclose(f, golden(a, b), rtol=1e-6, atol=1e-6)
    assert f.__array_interface__["data"][0] == address
    # The result names the caller's object, which still exports the memory.
    assert r.outputs["f"] is out
    assert np.shares_memory(np.from_dlpack(r.outputs["f"]), f)


def test_dlpack_everywhere_named(worker, vec):
    a, b = inputs(3)
    f = np.zeros(N, dtype=np.float32)
    worker.run(vec, a=DLPackOnly(a), b=DLPackOnly(b), f=DLPackOnly(f), blocks=2)
    np.testing.assert_allclose(f, golden(a, b), rtol=1e-6, atol=1e-6)


def test_allocated_output_exports_dlpack(worker, vec):
    a, b = inputs(4)
    r = worker.run(vec, a=a, b=b, f=None, blocks=1)
    f = r.outputs["f"]
    assert hasattr(f, "__dlpack__") and hasattr(f, "__dlpack_device__")
    assert tuple(f.__dlpack_device__()) == (1, 0)  # kDLCPU, device 0
    g = np.from_dlpack(f)
    assert np.shares_memory(g, f)
    assert g.shape == (N,) and g.dtype == np.float32
    np.testing.assert_allclose(g, golden(a, b), rtol=1e-6, atol=1e-6)


def test_allocated_output_feeds_the_next_run(worker, vec):
    # A binding-allocated output, passed on as another framework would:
    # through DLPack only, as the next run's input.
    a, b = inputs(5)
    first = worker.run(vec, a=a, b=b, f=None, blocks=1).outputs["f"]
    f = np.zeros(N, dtype=np.float32)
    worker.run(vec, (DLPackOnly(first), DLPackOnly(b), f), (1,))
    np.testing.assert_allclose(f, golden(golden(a, b), b), rtol=1e-5, atol=1e-5)


def test_dlpack_non_contiguous_is_a_shape_error(worker, vec):
    a, b = inputs(6)
    strided = np.zeros(2 * N, dtype=np.float32)[::2]
    f = np.zeros(N, dtype=np.float32)
    with pytest.raises(simpler.ShapeError, match="contiguous"):
        worker.run(vec, (DLPackOnly(strided), b, f), (1,))
    # The worker stays usable.
    worker.run(vec, (a, b, f), (1,))
    np.testing.assert_allclose(f, golden(a, b), rtol=1e-6, atol=1e-6)


def test_dlpack_wrong_dtype_names_the_argument(worker, vec):
    a, b = inputs(7)
    f = np.zeros(N, dtype=np.float32)
    with pytest.raises(simpler.ArgumentError, match="'a'"):
        worker.run(vec, (DLPackOnly(a.astype(np.float64)), b, f), (1,))
    worker.run(vec, (a, b, f), (1,))
    np.testing.assert_allclose(f, golden(a, b), rtol=1e-6, atol=1e-6)
