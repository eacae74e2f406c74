"""simpler.errors: one class per status under its category, and (with a
Worker) each failure a run can hit raising its class, the worker usable after."""
import os
import pickle

import numpy as np
import pytest

import simpler
from simpler import errors

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
RUNTIMES = ("hbg", "tmr")

CATEGORIES = {
    "ArgumentError": ["EINVAL", "EDTYPE", "ESHAPE", "EARGCOUNT", "ETASK_ARGS", "EFUNC_ID",
                      "EARG_SIGNATURE", "EDEP", "EPREDICATE", "EL3_PLACEMENT"],
    "DeviceMemoryError": ["ENOMEM", "EDEVMEM", "EBADPTR", "EDOUBLEFREE", "EBOUNDS", "EMAPPED",
                          "EHEAP_TOO_SMALL"],
    "ModuleError": ["EMODULE", "EMODULE_SYMBOL", "EABI", "ECONTRACT", "EKERNEL_LOAD",
                    "EKERNEL_ENTRY"],
    "CallableError": ["EBLOB", "ECALLABLE"],
    "KernelError": ["EKERNEL_FAULT", "EKERNEL_TIMEOUT", "EKERNEL_OVERRUN"],
    "OrchestrationError": ["EORCH_FATAL", "EORCH_CRASH", "EORCH_THREAD", "ESCOPE",
                           "EGRAPH_LIMIT", "EGRAPH_TASK"],
    "DeadlockError": ["ESCOPE_DEADLOCK", "EHEAP_DEADLOCK", "EWINDOW_DEADLOCK", "ECONTROL_WAIT",
                      "ETENSOR_RETIRED"],
    "TimeoutError": ["ETIMEOUT", "ERANK_TIMEOUT"],
    "StateError": ["ESTATE", "ESTALE", "EREPLAY_MISS"],
    "DeviceError": ["EBUSY", "ENOTSUP", "ESYS", "EGEOMETRY", "ESLOT", "EUNUSABLE", "ELAUNCH",
                    "ELAUNCH_PARTIAL", "ESTALL", "EDUPLICATE", "ERANK"],
}


def test_every_status_has_a_class_with_its_code():
    for value, name, hint in simpler.statuses():
        if value == 0:
            continue
        cls = errors.by_status[value]
        assert cls is errors.by_name[name]
        assert cls.status == value, name
        assert issubclass(cls, simpler.Error)
        e = cls(value, "the message")
        assert (e.status, e.name, e.hint, e.message) == (value, name, hint, "the message")
        assert str(e) == f"{name}: the message\n  hint: {hint}"


def test_class_names_and_categories():
    seen = set()
    for category, shorts in CATEGORIES.items():
        cat = getattr(simpler, category)
        for short in shorts:
            cls = errors.by_name["SP_" + short]
            expect = "".join(p.capitalize() for p in short[1:].split("_")) + "Error"
            assert cls.__name__ == expect
            assert getattr(simpler, expect) is cls
            assert issubclass(cls, cat), (short, category)
            seen.add("SP_" + short)
    assert seen == {name for value, name, _ in simpler.statuses() if value}


def test_builtin_bases_and_named_classes():
    assert issubclass(simpler.ArgumentError, ValueError)
    assert issubclass(simpler.TimeoutError, TimeoutError)
    assert simpler.TimeoutError.status == -16
    assert issubclass(simpler.KernelFaultError, simpler.KernelError)
    assert issubclass(simpler.ArgSignatureError, simpler.ArgumentError)
    assert simpler.BusyError.status == -12 and issubclass(simpler.BusyError, simpler.DeviceError)
    assert issubclass(simpler.CompileError, simpler.ArgumentError)
    assert simpler.CompileError(message="cc failed").status == -1
    assert simpler.DevmemError.status == -3 and simpler.InvalError.status == -1


def test_unknown_status_is_the_base_class():
    assert errors.error_class(-1000) is simpler.Error
    e = simpler.Error(-1000, "from a newer library")
    assert e.name == "SP_E?" and e.message == "from a newer library"


def test_message_that_restates_the_name_is_not_doubled():
    e = simpler.InvalError(-1, "SP_EINVAL: x is bad")
    assert e.message == "x is bad"
    assert str(e).startswith("SP_EINVAL: x is bad\n")


def test_pickles():
    e = simpler.KernelFaultError(-44, "task 3: kernel 'k' (func_id 0) crashed on core 1 with "
                                      "SIGSEGV")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is simpler.KernelFaultError
    assert (back.status, back.message, back.task, back.kernel) == (-44, e.message, 3, "k")


def test_kernel_error_fields_from_the_runtime_message():
    e = simpler.KernelFaultError(
        -44, "device 1: task 7: kernel 'vec_add' (func_id 2) crashed on core 4 with SIGSEGV")
    assert (e.device, e.task, e.kernel, e.func_id, e.core) == (1, 7, "vec_add", 2, 4)
    t = simpler.KernelTimeoutError(
        -45, "task 12: kernel 'spin' (func_id 0) on core 3 ran 50.0 ms, past its timeout, "
             "and was stopped")
    assert (t.device, t.task, t.kernel, t.func_id, t.core) == (None, 12, "spin", 0, 3)
    o = simpler.KernelOverrunError(
        -47, "device 0: task 5: kernel 'w' (func_id 1) wrote past the end of tensor argument 2")
    assert (o.task, o.kernel, o.func_id, o.core) == (5, "w", 1, None)
    unknown = simpler.KernelFaultError(-44, "task 9: kernel '?' (func_id -1) crashed")
    assert (unknown.task, unknown.kernel, unknown.func_id) == (9, None, None)


def test_library_raises_registered_classes():
    with pytest.raises(simpler.BlobError) as ei:
        simpler.Callable(b"not a callable blob at all, not even close")
    assert isinstance(ei.value, simpler.CallableError)
    assert ei.value.name == "SP_EBLOB"


# ---- with a Worker (python/src/worker.c) ------------------------------------------------
@pytest.fixture(scope="module")
def fault_callable():
    return simpler.build_callable(
        os.path.join(KERNELS, "fault_orch.c"),
        kernels=[("fault_poke", "aiv", os.path.join(KERNELS, "fault_kernel.c"))],
        signature="x:in:i64[n],out:out_existing:i64[n],crash:scalar", name="fault")


def good_vector_run(w, vec):
    n = 64
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, dtype=np.float32)
    f = np.zeros(n, dtype=np.float32)
    w.run(vec, a=a, b=b, f=f, blocks=1)
    c = a + b
    np.testing.assert_array_equal(f, (c + 1) * (c + 2) + c)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_bad_argument_count(runtime):
    vec = simpler.example("vector_example")
    a = np.zeros(8, dtype=np.float32)
    with simpler.Worker(runtime=runtime) as w:
        with pytest.raises(simpler.ArgSignatureError) as ei:
            w.run(vec, tensors=[simpler.In(a), simpler.In(a)], scalars=[1])
        assert isinstance(ei.value, simpler.ArgumentError)
        assert ei.value.status == -49
        good_vector_run(w, vec)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_wrong_dtype_names_the_argument(runtime):
    vec = simpler.example("vector_example")
    a = np.zeros(8, dtype=np.float32)
    b64 = np.zeros(8, dtype=np.float64)
    f = np.zeros(8, dtype=np.float32)
    with simpler.Worker(runtime=runtime) as w:
        with pytest.raises(simpler.ArgSignatureError) as ei:
            w.run(vec, a=a, b=b64, f=f, blocks=1)
        assert "'b'" in ei.value.message and "f64" in ei.value.message
        good_vector_run(w, vec)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_kernel_crash_names_task_and_kernel(runtime, fault_callable):
    x = np.arange(16, dtype=np.int64)
    out = np.zeros(16, dtype=np.int64)
    with simpler.Worker(runtime=runtime) as w:
        with pytest.raises(simpler.KernelFaultError) as ei:
            w.run(fault_callable, x=x, out=out, crash=1)
        e = ei.value
        assert isinstance(e, simpler.KernelError) and e.status == -44
        assert e.kernel == "fault_poke" and e.func_id == 0
        assert e.task is not None and e.core is not None
        assert f"task {e.task}" in e.message
        # The device stays usable: the same callable, then another one.
        w.run(fault_callable, x=x, out=out, crash=0)
        np.testing.assert_array_equal(out, x + 1)
        good_vector_run(w, simpler.example("vector_example"))
