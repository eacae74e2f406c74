"""simpler.Trace: a run's records and edges as numpy arrays, its task count,
and libsimpler's exporters (JSON, SVG, DOT, STATS) with the callable's
kernel names; a traced run on both runtimes, an untraced one has none."""
import json
import os
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import simpler

SLICE, DUMMY, SCHED_PASS = 1, 2, 3
AIV = 2  # sp_task_shape


def record_dtype():
    return simpler._simpler._trace_from_bytes(b"", b"").records.dtype


def synthetic_trace(callable_=None):
    """Three tasks: 0 (vec_add, two blocks), 1 (vec_mul), 2 (a dummy); edges 0->1, 1->2."""
    recs = np.zeros(5, dtype=record_dtype())
    rows = [  # task, dispatch, start, end, func_id, block, core, kind
        (0, 100, 110, 200, 0, 0, 0, SLICE),
        (0, 100, 120, 210, 0, 1, 1, SLICE),
        (1, 220, 230, 300, 2, 0, 2, SLICE),
        (2, 310, 310, 310, -1, 0, 0xffff, DUMMY),
        (0, 90, 90, 320, -1, 0, 0xffff, SCHED_PASS),
    ]
    for i, (task, disp, start, end, fid, block, core, kind) in enumerate(rows):
        recs[i]["task"], recs[i]["dispatch_ns"], recs[i]["start_ns"] = task, disp, start
        recs[i]["end_ns"], recs[i]["func_id"], recs[i]["block"] = end, fid, block
        recs[i]["core"], recs[i]["kind"], recs[i]["lane"] = core, kind, 1
        recs[i]["shape"] = AIV if kind == SLICE else 0
    edges = np.zeros(2, dtype=[("producer", "<u8"), ("consumer", "<u8"), ("kind", "<u4"),
                               ("reserved", "<u4")])
    edges["producer"], edges["consumer"], edges["kind"] = [0, 1], [1, 2], [1, 1]
    return simpler._simpler._trace_from_bytes(recs.tobytes(), edges.tobytes(), level=2,
                                             sched_threads=1, clusters=1, callable=callable_,
                                             runtime="hbg")


def test_records_and_edges_are_structured_arrays():
    t = synthetic_trace()
    r = t.records
    assert r.dtype.itemsize == 56 and len(r) == 5 == len(t) == t.record_count
    assert list(r.dtype.names) == ["task", "submit_ns", "dispatch_ns", "start_ns", "end_ns",
                                   "func_id", "block", "core", "thread", "kind", "shape", "lane"]
    assert list(r["task"]) == [0, 0, 1, 2, 0] and list(r["func_id"][:3]) == [0, 0, 2]
    assert not r.flags.writeable  # a view of the trace's own copy
    e = t.edges
    assert len(e) == t.edge_count == 2
    assert list(e["producer"]) == [0, 1] and list(e["consumer"]) == [1, 2]
    assert (t.level, t.sched_threads, t.clusters, t.runtime) == (2, 1, 1, "hbg")
    assert t.records_dropped == 0 and t.edges_dropped == 0


def test_task_count_counts_distinct_slice_and_dummy_tasks():
    # Task 0 has two blocks and a scheduler pass names "task 0" too: 3 tasks.
    assert synthetic_trace().task_count == 3
    assert simpler._simpler._trace_from_bytes(b"", b"").task_count == 0


def test_exporters_write_each_format(tmp_path):
    t = synthetic_trace(simpler.example("vector_example"))
    t.write_json(tmp_path / "t.json")
    doc = json.load(open(tmp_path / "t.json"))
    text = json.dumps(doc)
    assert "vec_add" in text and "vec_mul" in text  # kernel names from the callable
    t.write_svg(tmp_path / "t.svg")
    assert ET.parse(tmp_path / "t.svg").getroot().tag.endswith("svg")
    t.write_dot(tmp_path / "t.dot")
    assert "digraph" in (tmp_path / "t.dot").read_text()
    t.write_stats(tmp_path / "t.txt")
    assert (tmp_path / "t.txt").read_text().strip()
    stats = t.stats_text()
    assert stats == (tmp_path / "t.txt").read_text()
    assert "tasks=3 AIC=0 AIV=2 MIX=0 dummy=1" in stats and "kernel vec_mul count=1" in stats
    # By extension, by name, and text of any format.
    t.write(tmp_path / "w.dot")
    assert (tmp_path / "w.dot").read_text() == (tmp_path / "t.dot").read_text()
    t.write(tmp_path / "w.out", format="json")
    assert json.load(open(tmp_path / "w.out")) == doc
    assert json.loads(t.text("json")) == doc


def test_without_a_callable_kernels_are_numbered(tmp_path):
    t = synthetic_trace()
    assert "f0" in t.text("json") and "vec_add" not in t.text("json")


def test_bad_formats_and_paths_are_named_errors(tmp_path):
    t = synthetic_trace()
    with pytest.raises(simpler.InvalError, match="trace format"):
        t.write(tmp_path / "trace.bin")
    with pytest.raises(simpler.InvalError, match="unknown trace format 'png'"):
        t.write(tmp_path / "t.json", format="png")
    with pytest.raises(simpler.SysError):
        t.write_json(tmp_path / "no" / "such" / "dir" / "t.json")
    with pytest.raises(simpler.InvalError):  # level 0: nothing to export
        simpler._simpler._trace_from_bytes(b"", b"", level=0).stats_text()


# ---- traced runs (python/src/worker.c) ----------------------------------------------------
@pytest.mark.parametrize("runtime", ["hbg", "tmr"])
def test_traced_run_counts_the_graphs_tasks(runtime, tmp_path):
    vec = simpler.example("vector_example")
    n = 256
    a = np.linspace(0, 1, n, dtype=np.float32)
    b = np.ones(n, dtype=np.float32)
    f = np.zeros(n, dtype=np.float32)
    with simpler.Worker(runtime=runtime) as w:
        r = w.run(vec, a=a, b=b, f=f, blocks=2, trace=True)
        c = a + b
        np.testing.assert_allclose(f, (c + 1) * (c + 2) + c, rtol=1e-6)
        t = r.trace
        assert isinstance(t, simpler.Trace) and t.level >= simpler.TRACE_TASKS
        # vector_example: five tasks, six data edges (its orchestration.c).
        assert t.task_count == r.stats.tasks == 5
        assert t.edge_count == len(t.edges) == r.stats.edges == 6
        assert t.runtime == runtime
        slices = t.records[t.records["kind"] == SLICE]
        assert len(slices) == 10  # two blocks per task
        assert set(slices["func_id"]) == {0, 1, 2}
        t.write_json(tmp_path / "t.json")
        doc = json.load(open(tmp_path / "t.json"))
        assert "vec_add_scalar" in json.dumps(doc)
        t.write_svg(tmp_path / "t.svg")
        ET.parse(tmp_path / "t.svg")
        t.write_dot(tmp_path / "t.dot")
        assert (tmp_path / "t.dot").read_text().strip()
        assert "tasks" in t.stats_text()
        # An untraced run has no trace.
        assert w.run(vec, a=a, b=b, f=f, blocks=1).trace is None
