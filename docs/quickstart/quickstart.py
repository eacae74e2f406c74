"""The quickstart from Python: the same kernels.c and orchestration.c as
main.c, built into a callable by build_callable (cached), run on numpy
arrays, checked against numpy, and traced.

usage: python3 quickstart.py [hbg|tmr] [trace.svg]
"""
import os
import sys

import numpy as np

import simpler

HERE = os.path.dirname(os.path.abspath(__file__))

# What simpler_add_callable does in CMakeLists.txt: each kernel named once
# (its func_id is its position), the signature checked on every run.
callable_ = simpler.build_callable(
    name="quickstart_callable",  # the orchestration includes quickstart_callable_kernels.h
    orchestration=os.path.join(HERE, "orchestration.c"),
    entry="quickstart_orch",
    config="quickstart_config",
    signature="x:in:f32[n],y:in:f32[n],z:out:f32[n],tile:scalar",
    kernels=[("qs_scale", "aiv", os.path.join(HERE, "kernels.c"), "ios"),
             ("qs_add", "aiv", os.path.join(HERE, "kernels.c"), "iie")])

runtime = sys.argv[1] if len(sys.argv) > 1 else "hbg"
x = np.arange(4096, dtype=np.float32)
y = np.full(4096, 0.5, dtype=np.float32)

with simpler.Worker(runtime=runtime) as w:
    # z=None: the binding allocates z from the signature (f32[n], n from x).
    r = w.run(callable_, x=x, y=y, z=None, tile=512, trace=True)
    z = r["z"]
    ok = np.array_equal(z, 2 * x + y)
    print(f"quickstart.py: {r.stats.tasks} tasks, {r.stats.edges} edges, "
          f"z = 2*x + y: {'PASS' if ok else 'FAIL'}")
    if len(sys.argv) > 2:
        r.trace.write(sys.argv[2])  # the format from the extension: .json .svg .dot .txt
    sys.exit(0 if ok else 1)
