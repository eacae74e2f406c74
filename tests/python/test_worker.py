"""simpler.Worker's run path: arguments into sp_args (dtypes, shapes,
directions, scalars, names, None outputs), zero copy in and out, and the
Worker's own surface (register, run by id, config, stats, close)."""
import struct
import threading

import numpy as np
import pytest

import simpler
from conftest import vector_golden

probe = simpler._simpler._args_probe


@pytest.fixture(scope="module")
def worker():
    # A device has the geometry of its first open: two clusters and two
    # scheduler threads, so a run may ask for either geometry.
    with simpler.Worker(runtime="hbg", clusters=2, sched_threads=2) as w:
        yield w


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


# ---- tensors -----------------------------------------------------------------


@pytest.mark.parametrize("dtype,name", [
    (np.float32, "f32"), (np.float64, "f64"), (np.float16, "f16"),
    (np.int8, "i8"), (np.uint8, "u8"), (np.int16, "i16"), (np.uint16, "u16"),
    (np.int32, "i32"), (np.uint32, "u32"), (np.int64, "i64"),
    (np.uint64, "u64"), (np.bool_, "bool"),
])
def test_dtype_from_buffer_format(dtype, name):
    x = np.zeros((2, 3), dtype=dtype)
    t = probe(None, [simpler.In(x)])["tensors"][0]
    assert t == (simpler.IN, name, (2, 3), x.ctypes.data)


def test_other_buffers_bytearray_memoryview_array():
    import array
    assert probe(None, [simpler.In(bytearray(8))])["tensors"][0][1:3] == ("u8", (8,))
    assert probe(None, [simpler.In(memoryview(b"abcd"))])["tensors"][0][1:3] == ("u8", (4,))
    assert probe(None, [simpler.In(array.array("l", [1, 2]))])["tensors"][0][1:3] == (
        "i64", (2,))
    assert probe(None, [simpler.In(array.array("f", [1]))])["tensors"][0][1] == "f32"


def test_bf16_override_keeps_the_buffer():
    x = np.zeros(8, dtype=np.uint16)
    t = probe(None, [simpler.In(x, dtype="bf16")])["tensors"][0]
    assert t == (simpler.IN, "bf16", (8,), x.ctypes.data)
    assert simpler.In(x, dtype="bf16").dtype == "bf16"


def test_dtype_override_of_another_item_size_is_refused():
    with pytest.raises(simpler.DtypeError, match="bf16 is 2 bytes"):
        probe(None, [simpler.In(np.zeros(4, np.float32), dtype="bf16")])
    with pytest.raises(simpler.DtypeError, match="unknown dtype"):
        simpler.In(np.zeros(4), dtype="f128")


def test_zero_d_array_is_shape_1():
    x = np.array(3.0, dtype=np.float32)
    assert probe(None, [simpler.In(x)])["tensors"][0][2] == (1,)


def test_more_than_five_dims_is_a_shape_error():
    with pytest.raises(simpler.ShapeError, match="6 dimensions"):
        probe(None, [simpler.In(np.zeros((1,) * 6, np.float32))])
    assert probe(None, [simpler.In(np.zeros((1,) * 5, np.float32))])["tensors"][0][2] == (
        1, 1, 1, 1, 1)


def test_empty_dimension_is_a_shape_error():
    with pytest.raises(simpler.ShapeError):
        probe(None, [simpler.In(np.zeros((2, 0), np.float32))])


def test_non_contiguous_is_a_shape_error_naming_it(vec):
    a = np.zeros(16, np.float32)[::2]
    b = np.zeros(8, np.float32)
    with pytest.raises(simpler.ShapeError,
                       match=r"argument 'a' is not C-contiguous; pass "
                             r"numpy.ascontiguousarray\(a\)"):
        probe(vec, [a, b, b], [1])
    with pytest.raises(simpler.ShapeError, match="argument 1 is not C-contiguous"):
        probe(None, [simpler.In(b), simpler.In(np.zeros((4, 4), np.float32).T)])


def test_read_only_output_is_refused(vec):
    a = np.zeros(8, np.float32)
    f = np.zeros(8, np.float32)
    f.setflags(write=False)
    with pytest.raises(simpler.ArgumentError, match="argument 'f' is read-only"):
        probe(vec, [a, a, f], [1])
    # an input may be read-only
    assert probe(vec, [f, f, a], [1])["tensors"][0][0] == simpler.IN
    with pytest.raises(simpler.ArgumentError, match="read-only"):
        probe(None, [simpler.Out(b"abcd")])


def test_not_a_tensor_is_an_argument_error():
    with pytest.raises(simpler.ArgumentError, match="argument 0: a str is not a tensor"):
        probe(None, [simpler.In("abc")])


def test_unknown_buffer_format_needs_a_dtype():
    x = np.zeros(2, dtype=np.complex64)
    with pytest.raises(simpler.DtypeError, match="no simpler dtype"):
        probe(None, [simpler.In(x)])
    assert probe(None, [simpler.In(x.view(np.uint64), dtype="f64")])["tensors"][0][1] == "f64"


# ---- directions -------------------------------------------------------------


def test_directions_from_the_signature(vec):
    a = np.zeros(8, np.float32)
    dirs = [t[0] for t in probe(vec, [a, a, a], [1])["tensors"]]
    assert dirs == [simpler.IN, simpler.IN, simpler.OUT]


def test_wrappers_override_the_signature(vec):
    a = np.zeros(8, np.float32)
    got = probe(vec, [simpler.InOut(a), a, simpler.OutExisting(a)], [1])["tensors"]
    assert [t[0] for t in got] == [simpler.INOUT, simpler.IN, simpler.OUT_EXISTING]
    assert simpler.Arg(a, simpler.NO_DEP).dir == simpler.NO_DEP
    assert simpler.NoDep(a).dir == simpler.NO_DEP


def test_no_direction_without_a_signature_is_an_error():
    a = np.zeros(8, np.float32)
    with pytest.raises(simpler.ArgumentError,
                       match="argument 1: no direction: the callable declares no signature; "
                             "wrap it in simpler.In/Out/InOut"):
        probe(None, [simpler.In(a), a])


def test_bad_direction_is_refused():
    with pytest.raises(simpler.ArgumentError):
        simpler.Arg(np.zeros(2), 9)


# ---- names and None outputs -------------------------------------------------


def test_named_and_positional_fill_the_slots(vec):
    a = np.zeros(8, np.float32)
    b = np.ones(8, np.float32)
    f = np.zeros(8, np.float32)
    got = probe(vec, [a], b=b, f=f, blocks=3)
    assert [t[3] for t in got["tensors"]] == [a.ctypes.data, b.ctypes.data, f.ctypes.data]
    assert got["scalars"] == [3]
    assert got["outputs"]["f"] is f


def test_a_name_twice_or_unknown_is_an_error(vec):
    a = np.zeros(8, np.float32)
    with pytest.raises(simpler.ArgSignatureError, match="argument 'a' given twice"):
        probe(vec, [a, a, a], [1], a=a)
    with pytest.raises(simpler.ArgSignatureError, match="scalar 'blocks' given twice"):
        probe(vec, [a, a, a], [1], blocks=1)
    with pytest.raises(simpler.ArgSignatureError, match="no argument 'nope'"):
        probe(vec, [a, a, a], [1], nope=1)
    with pytest.raises(simpler.ArgSignatureError, match="argument 'b' is missing"):
        probe(vec, [a], f=a, blocks=1)
    with pytest.raises(simpler.ArgSignatureError, match="declares no signature"):
        probe(None, [], x=a)


def test_run_by_name_equals_positional_and_names_its_errors(worker, vec):
    """Worker.run's own keyword path (not _args_probe's dict): names the
    interpreter interned and names built at run time (** of a dict whose
    keys are not interned) land in the same slots, next to the call's own
    keywords, and the errors name the argument as the dict path does."""
    a, b = np.full(8, 2, np.float32), np.full(8, 3, np.float32)
    f1, f2, f3 = (np.zeros(8, np.float32) for _ in range(3))
    worker.run(vec, [a, b, f1], [1])
    r = worker.run(vec, a=a, b=b, f=f2, blocks=1, trace=True, config=simpler.CallConfig())
    assert r.outputs["f"] is f2 and r.trace is not None
    dyn = {"".join(("bl", "ocks")): 1, "".join(("tr", "ace")): True, "".join(("a",)): a}
    r = worker.run(vec, [], None, None, b=b, f=f3, **dyn)
    assert r.outputs["f"] is f3 and r.trace is not None and list(r.outputs) == ["f"]
    np.testing.assert_array_equal(f1, f2)
    np.testing.assert_array_equal(f1, f3)
    r = worker.run(callable=vec, tensors=[a], scalars=[1], b=b, f=None)
    np.testing.assert_array_equal(r["f"], f1)
    with pytest.raises(simpler.ArgSignatureError, match="argument 'a' given twice"):
        worker.run(vec, [a, b, f1], [1], a=a)
    with pytest.raises(simpler.ArgSignatureError, match="scalar 'blocks' given twice"):
        worker.run(vec, [a, b, f1], [1], **{"".join(("bl", "ocks")): 1})
    with pytest.raises(simpler.ArgSignatureError, match="no argument 'nope'"):
        worker.run(vec, [a, b, f1], [1], nope=1)
    with pytest.raises(simpler.ArgSignatureError, match="argument 'b' is missing"):
        worker.run(vec, [a], f=f1, blocks=1)
    with pytest.raises(TypeError, match="multiple values for 'tensors'"):
        worker.run(vec, [a], tensors=[a])
    np.testing.assert_array_equal(worker.run(vec, a=a, b=b, f=f3, blocks=1)["f"], f1)


def test_none_output_is_allocated_from_the_signature(vec):
    a = np.zeros(15, np.float32)
    got = probe(vec, [a, a, None], [1])
    f = got["outputs"]["f"]
    assert isinstance(f, np.ndarray) and f.shape == (15,) and f.dtype == np.float32
    assert got["tensors"][2] == (simpler.OUT, "f32", (15,), f.ctypes.data)
    # an override names the dtype numpy has no type for: bf16 in uint16
    got = probe(vec, [a, a, simpler.Out(None, dtype="bf16")], [1])
    assert got["outputs"]["f"].dtype == np.uint16 and got["tensors"][2][1] == "bf16"


def test_none_output_unresolvable_extent_is_an_error(chain):
    counter = np.zeros(1, np.int64)
    with pytest.raises(simpler.ArgSignatureError, match="extent 's' is bound by no tensor"):
        probe(chain, [counter, None], [1])
    with pytest.raises(simpler.ArgSignatureError, match="only an OUT or OUT_EXISTING"):
        probe(chain, [None, np.zeros(4, np.int64)], [1])
    with pytest.raises(simpler.ArgSignatureError, match="signature declares can be allocated"):
        probe(None, [simpler.Out(None)])


# ---- scalars -----------------------------------------------------------------


def test_scalars_ints_negative_bool_numpy(vec):
    a = np.zeros(2, np.float32)
    words = lambda *s: probe(None, [], list(s))["scalars"]  # noqa: E731
    assert words(0, 7, 2**64 - 1, -1, -2**63) == [0, 7, 2**64 - 1, 2**64 - 1, 2**63]
    assert words(True, False) == [1, 0]
    assert words(np.int32(-2), np.uint8(200), np.int64(5), np.bool_(True)) == [
        2**64 - 2, 200, 5, 1]
    assert words(np.float32(1.5)) == [f32_bits(1.5)]
    assert words(1.5, np.float64(2.5)) == [f64_bits(1.5), f64_bits(2.5)]
    # a float with an i64 signature: its f64 bits
    assert probe(vec, [a, a, a], [0.5])["scalars"] == [f64_bits(0.5)]


def test_float_scalar_with_an_f32_signature():
    pa = simpler.example("paged_attention")
    assert probe(pa, [], [0.125])["scalars"] == [f32_bits(0.125)]
    assert probe(pa, [], scale=2)["scalars"] == [f32_bits(2.0)]
    assert probe(pa, [], [np.float32(0.25)])["scalars"] == [f32_bits(0.25)]


def test_bad_scalars_are_argument_errors(vec):
    with pytest.raises(simpler.ArgumentError, match="scalar 0: 18446744073709551616 is outside"):
        probe(None, [], [2**64])
    with pytest.raises(simpler.ArgumentError, match="scalar 0: -9223372036854775809 is outside"):
        probe(None, [], [-2**63 - 1])
    a = np.zeros(2, np.float32)
    with pytest.raises(simpler.ArgumentError, match="scalar 'blocks': a str is no scalar"):
        probe(vec, [a, a, a], ["1"])
    with pytest.raises(simpler.ArgumentError, match="no scalar"):
        probe(None, [], [np.zeros(3)])


# ---- runs ----------------------------------------------------------------------


def test_run_writes_into_the_callers_array(worker, vec):
    n = 1000
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 2.0, np.float32)
    f = np.zeros(n, np.float32)
    addr = f.ctypes.data
    r = worker.run(vec, [a, b, f], [1])
    assert r.outputs["f"] is f and r["f"] is f
    assert f.ctypes.data == addr
    np.testing.assert_allclose(f, vector_golden(a, b), rtol=1e-6)
    assert r.stats.tasks == 5 and r.stats.edges == 6
    assert r.trace is None


def test_run_zero_copy_into_a_view_of_a_bigger_buffer(worker, vec):
    n = 64
    a = np.arange(n, dtype=np.float32)
    big = np.zeros(3 * n, np.float32)
    f = big[n:2 * n]  # a contiguous view: written in place, the rest untouched
    worker.run(vec, tensors=[a, a, f], scalars=[2])
    np.testing.assert_allclose(big[n:2 * n], vector_golden(a, a), rtol=1e-6)
    assert not big[:n].any() and not big[2 * n:].any()


def test_run_with_names_and_a_none_output(worker, vec):
    a = np.linspace(0, 1, 300, dtype=np.float32)
    b = np.linspace(1, 2, 300, dtype=np.float32)
    r = worker.run(vec, [a], b=b, f=None, blocks=4)
    np.testing.assert_allclose(r["f"], vector_golden(a, b), rtol=1e-6)


def test_register_is_idempotent_and_runs_by_id(worker, vec):
    i = worker.register(vec)
    assert worker.register(vec) == i
    a = np.ones(16, np.float32)
    f = np.zeros(16, np.float32)
    worker.run(i, [a, a, f], [1])
    np.testing.assert_allclose(f, vector_golden(a, a))
    with pytest.raises(simpler.ArgumentError, match="registered under id"):
        worker.register(vec, id=i + 1)


def test_unregister_then_run_registers_again():
    c = simpler.example("vector_example")
    with simpler.Worker(runtime="tmr") as w:
        i = w.register(c, id=7)
        assert i == 7
        w.unregister(c)
        a = np.ones(8, np.float32)
        f = np.zeros(8, np.float32)
        w.run(c, [a, a, f], [1])  # registered again on first use
        np.testing.assert_allclose(f, vector_golden(a, a))
        w.unregister(w.register(c))
        with pytest.raises(simpler.ArgumentError, match="not registered"):
            w.unregister(c)


def test_failed_run_raises_then_the_worker_runs_again(worker, vec):
    a = np.ones(8, np.float32)
    f = np.zeros(8, np.float32)
    with pytest.raises(simpler.ArgSignatureError):
        worker.run(vec, [a, a], [1])  # one tensor short
    with pytest.raises(simpler.ArgSignatureError):
        worker.run(vec, [a, a.astype(np.float64), f], [1])
    worker.run(vec, [a, a, f], [1])
    np.testing.assert_allclose(f, vector_golden(a, a))


def test_traced_run_has_a_trace(worker, vec):
    a = np.ones(8, np.float32)
    f = np.zeros(8, np.float32)
    assert worker.run(vec, [a, a, f], [1], trace=True).trace is not None
    cfg = simpler.CallConfig(trace_level=simpler.TRACE_TASKS)
    assert worker.run(vec, [a, a, f], [1], cfg).trace is not None
    assert worker.run(vec, [a, a, f], [1]).trace is None


def test_call_config_fields_and_repr():
    c = simpler.CallConfig(clusters=1, sched_threads=1, heap_bytes=1 << 20, check=True)
    assert c.clusters == 1 and c.heap_bytes == 1 << 20 and c.check is True
    assert repr(c) == "simpler.CallConfig(clusters=1, sched_threads=1, heap_bytes=1048576, " \
                      "check=True)"
    c.check = False
    assert c.check is False
    c.check = None
    assert c.check is None and c.flags == 0
    c.task_window = 64
    assert c.task_window == 64
    assert repr(simpler.CallConfig()) == "simpler.CallConfig()"


def test_run_with_a_config_on_two_geometries(worker, vec):
    a = np.arange(512, dtype=np.float32)
    for clusters in (1, 2):
        f = np.zeros(512, np.float32)
        cfg = simpler.CallConfig(clusters=clusters, sched_threads=clusters)
        worker.run(vec, [a, a, f], [2], config=cfg)
        np.testing.assert_allclose(f, vector_golden(a, a), rtol=1e-6)
    assert worker.device_info["geometry"]["clusters"] == 2


def test_run_stats_is_a_struct_sequence(worker, vec):
    a = np.ones(8, np.float32)
    st = worker.run(vec, [a, a, None], [1]).stats
    assert isinstance(st, simpler.RunStats)
    assert st._fields if hasattr(st, "_fields") else True
    assert st.tasks == st[0] == 5
    assert len(st) == 12 and st.device_ns > 0
    # issue 16's fields: a run without replay is fresh, nothing skipped or patched
    assert (st.replay, st.skipped, st.patch_bytes) == ("fresh", 0, 0) == tuple(st[8:11])
    # issue 18's: tasks queued behind their producer on its core (a count)
    assert st.chained == st[11] >= 0


def test_worker_surface(worker):
    assert worker.runtime == "hbg"
    assert worker.lane_depth in (1, 2)
    info = worker.device_info
    assert info["platform"] == "sim" and info["core_count"] >= 3
    assert isinstance(worker.last_error, str)


def test_open_failure_raises():
    with pytest.raises(simpler.Error):
        simpler.Worker(runtime="nosuchruntime")
    with pytest.raises(simpler.ArgumentError):
        simpler.Worker(runtime="hbg", log_level="loud")


def test_close_is_idempotent_and_later_calls_raise(vec):
    w = simpler.Worker(runtime="hbg")
    w.close()
    w.close()
    a = np.ones(8, np.float32)
    with pytest.raises(simpler.StateError):
        w.run(vec, [a, a, a], [1])
    with pytest.raises(simpler.StateError):
        w.register(vec)
    with pytest.raises(simpler.StateError):
        w.device_info


def test_two_threads_run_on_one_worker(worker, vec):
    """The second thread gets its own argument slot: both results right."""
    errors = []

    def loop(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(20):
                a = rng.random(257, dtype=np.float32)
                f = np.zeros(257, np.float32)
                worker.run(vec, [a, a, f], [1])
                np.testing.assert_allclose(f, vector_golden(a, a), rtol=1e-6)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=loop, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_c_run_loop_returns_one_time_per_run(worker, vec):
    a = np.ones(8, np.float32)
    f = np.zeros(8, np.float32)
    ns = worker._c_run_loop(vec, [a, a, f], [1], None, 5)
    assert len(ns) == 5 and all(t > 0 for t in ns)
    np.testing.assert_allclose(f, vector_golden(a, a))
