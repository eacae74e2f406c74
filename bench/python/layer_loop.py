#!/usr/bin/python3
"""The loop bench/python/layer_ir.sh runs under callgrind: N runs of the
1-task bench callable (bench/python_overhead.py's) through Worker.run,
positional or named, after the same number of warm-up runs of that form.

  layer_loop.py BUILD_DIR positional|named N
"""
import os
import sys

build, form, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, os.path.join(os.path.abspath(build), "python"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import numpy as np  # noqa: E402
import simpler  # noqa: E402
import python_overhead as po  # noqa: E402

cache = os.environ.get("SIMPLER_CACHE_DIR") or os.path.join(build, "bench", "python", "cache")
c = po.build_callables(simpler, cache)[1]
rows = np.zeros((1, po.ROW), np.float32)
with simpler.Worker(runtime="hbg") as w:
    w.register(c)
    run, t = w.run, (rows,)
    for _ in range(2):  # warm-up, then the measured loop: the same count each
        if form == "named":
            for _ in range(n):
                run(c, rows=rows)
        else:
            for _ in range(n):
                run(c, t)
