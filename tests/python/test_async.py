"""The async lane from Python: Worker.submit and simpler.Run (wait, done),
runs in flight with their buffers held, the lane's bound, close with runs
in flight. Results are checked per run; no timing is asserted."""
import collections
import time

import numpy as np
import pytest

import simpler
from conftest import vector_golden

RUNTIMES = ("hbg", "tmr")


def chain_args(stamps):
    return np.zeros(1, np.int64), np.full(stamps, -1, np.int64)


def check_chain(counter, log):
    assert counter[0] == len(log)
    np.testing.assert_array_equal(log, np.arange(len(log)))


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_100_runs_two_in_flight(runtime, vec):
    rng = np.random.default_rng(15)
    with simpler.Worker(runtime=runtime) as w:
        depth = w.lane_depth
        pending = collections.deque()
        checked = 0
        for i in range(100):
            n = 64 + i
            a = rng.random(n, dtype=np.float32)
            b = rng.random(n, dtype=np.float32)
            f = np.zeros(n, np.float32)
            if len(pending) == depth:
                h, pa, pb, pf = pending.popleft()
                r = h.wait()
                assert r.outputs["f"] is pf
                np.testing.assert_allclose(pf, vector_golden(pa, pb), rtol=1e-6)
                assert r.stats.tasks == 5
                checked += 1
            # the arrays are held by the run until it is waited for
            pending.append((w.submit(vec, [a, b, f], [1 + i % 3]), a, b, f))
        while pending:
            h, pa, pb, pf = pending.popleft()
            h.wait()
            np.testing.assert_allclose(pf, vector_golden(pa, pb), rtol=1e-6)
            checked += 1
        assert checked == 100


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_submit_with_names_none_output_and_trace(runtime, vec):
    a = np.arange(100, dtype=np.float32)
    with simpler.Worker(runtime=runtime) as w:
        h = w.submit(vec, [a], b=a, f=None, blocks=2, trace=True)
        r = h.wait()
        np.testing.assert_allclose(r["f"], vector_golden(a, a), rtol=1e-6)
        assert r.trace is not None and r.trace.task_count == r.stats.tasks == 5
        # waiting again gives the same result
        assert h.wait() is r


def test_wait_timeout_then_wait_again(chain):
    """tmr launches while the orchestration still submits, so a long chain
    is in flight right after submit: wait(timeout=0) only looks."""
    with simpler.Worker(runtime="tmr") as w:
        saw_timeout = False
        for stamps, gap in ((64, 512), (256, 2048), (1024, 4096)):
            counter, log = chain_args(stamps)
            h = w.submit(chain, [counter, log], [gap])
            try:
                h.wait(timeout=0)
            except simpler.TimeoutError as e:
                assert e.name == "SP_ETIMEOUT"
                saw_timeout = True
                assert isinstance(e, TimeoutError)  # the builtin too
            r = h.wait()  # still valid after the timeout
            assert r.stats.tasks == stamps + (stamps + 1) * gap
            check_chain(counter, log)
            if saw_timeout:
                break
        assert saw_timeout


def test_done_polls_until_the_run_is_over(chain):
    with simpler.Worker(runtime="tmr") as w:
        counter, log = chain_args(32)
        h = w.submit(chain, [counter, log], [64])
        deadline = time.monotonic() + 120
        while not h.done():
            assert time.monotonic() < deadline, "the run never completed"
            time.sleep(0.001)
        assert h.done()
        h.wait()
        assert h.done()
        check_chain(counter, log)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_run_dropped_unwaited(runtime, chain):
    with simpler.Worker(runtime=runtime) as w:
        counter, log = chain_args(16)
        h = w.submit(chain, [counter, log], [8])
        del h  # waited for in its dealloc: the buffers were held until then
        check_chain(counter, log)
        # its lane slot is free again
        runs = [w.submit(chain, list(chain_args(4)), [2]) for _ in range(w.lane_depth)]
        for r in runs:
            r.wait()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_busy_when_the_lane_is_full(runtime, chain):
    with simpler.Worker(runtime=runtime) as w:
        args = [chain_args(8) for _ in range(w.lane_depth + 1)]
        runs = [w.submit(chain, list(args[i]), [4]) for i in range(w.lane_depth)]
        with pytest.raises(simpler.BusyError) as e:
            w.submit(chain, list(args[-1]), [4])
        assert isinstance(e.value, simpler.DeviceError)
        assert "lane is full" in str(e.value)
        for r in runs:
            r.wait()
        for c, log in args[:-1]:
            check_chain(c, log)
        # room again
        w.submit(chain, list(args[-1]), [4]).wait()
        check_chain(*args[-1])


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_close_with_runs_in_flight(runtime, chain):
    w = simpler.Worker(runtime=runtime)
    args = [chain_args(16) for _ in range(w.lane_depth)]
    runs = [w.submit(chain, list(a), [16]) for a in args]
    w.close()  # finishes them first
    for r, (c, log) in zip(runs, args):
        assert r.done()
        assert r.wait().stats.tasks == 16 + 17 * 16
        check_chain(c, log)
    w.close()
    with pytest.raises(simpler.StateError):
        w.submit(chain, list(chain_args(2)), [1])


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_failed_run_raises_and_the_lane_goes_on(runtime, chain):
    """gap 0: the orchestration fails the run (SP_EINVAL). hbg runs the
    orchestration in submit, so submit raises; tmr on the chip, so wait
    raises, again at a second wait."""
    with simpler.Worker(runtime=runtime) as w:
        counter, log = chain_args(4)
        if runtime == "hbg":
            with pytest.raises(simpler.InvalError, match="gap=0"):
                w.submit(chain, [counter, log], [0])
        else:
            h = w.submit(chain, [counter, log], [0])
            with pytest.raises(simpler.InvalError, match="gap=0"):
                h.wait()
            with pytest.raises(simpler.InvalError, match="gap=0"):
                h.wait()  # the same failure again; the slot was released once
            assert h.done()
        runs = [w.submit(chain, list(chain_args(2)), [1]) for _ in range(w.lane_depth)]
        for r in runs:
            r.wait()
        w.submit(chain, [counter, log], [3]).wait()
        check_chain(counter, log)


def test_submit_refuses_bad_arguments_without_taking_a_slot(chain):
    with simpler.Worker(runtime="hbg") as w:
        for _ in range(w.lane_depth + 1):
            with pytest.raises(simpler.ArgSignatureError):
                w.submit(chain, [np.zeros(1, np.int64)], [1])
        counter, log = chain_args(4)
        w.submit(chain, [counter, log], [1]).wait()
        check_chain(counter, log)
