"""simpler: build and run task graphs on a simulated accelerator chip from Python.

The types are C (the extension simpler._simpler, over libsimpler's public
API); this package names them, defines the exceptions (simpler.errors) and
builds callables from C sources (simpler.build). docs/USAGE.md "Python".
"""
from . import _simpler
from . import errors
from .errors import (  # noqa: F401
    ArgumentError, CallableError, CompileError, DeadlockError, DeviceError, DeviceMemoryError,
    Error, KernelError, ModuleError, OrchestrationError, StateError, TimeoutError,
)
from .errors import *  # noqa: F401,F403 (one class per status: KernelFaultError, ...)

__version__ = _simpler.VERSION
ABI_VERSION = _simpler.ABI_VERSION
DTYPES = _simpler.DTYPES
IN = _simpler.IN
OUT = _simpler.OUT
INOUT = _simpler.INOUT
OUT_EXISTING = _simpler.OUT_EXISTING
NO_DEP = _simpler.NO_DEP
TRACE_OFF = _simpler.TRACE_OFF
TRACE_TASKS = _simpler.TRACE_TASKS
TRACE_SCHED = _simpler.TRACE_SCHED
TRACE_SUBMITS = _simpler.TRACE_SUBMITS
# trace record kinds (Trace.records["kind"]) and their names
TRACE_SLICE = _simpler.TRACE_SLICE
TRACE_DUMMY = _simpler.TRACE_DUMMY
TRACE_SCHED_PASS = _simpler.TRACE_SCHED_PASS
TRACE_SCHED_IDLE = _simpler.TRACE_SCHED_IDLE
TRACE_SUBMIT = _simpler.TRACE_SUBMIT
TRACE_SKIPPED = _simpler.TRACE_SKIPPED
TRACE_KINDS = _simpler.TRACE_KINDS
statuses = _simpler.statuses
status_name = _simpler.status_name
status_hint = _simpler.status_hint

# callables and traces (python/src/callable.c, trace.c)
Callable = _simpler.Callable
ArgSpec = _simpler.ArgSpec
KernelInfo = _simpler.KernelInfo
pack = _simpler.pack
kernels_header = _simpler.kernels_header
Trace = _simpler.Trace

# arguments, configuration, running (python/src/config.c, worker.c)
Worker = _simpler.Worker
DeviceArray = _simpler.DeviceArray
Run = _simpler.Run
CallConfig = _simpler.CallConfig
RunStats = _simpler.RunStats
RunResult = _simpler.RunResult
GraphCacheInfo = _simpler.GraphCacheInfo
Arg = _simpler.Arg
In = _simpler.In
Out = _simpler.Out
InOut = _simpler.InOut
OutExisting = _simpler.OutExisting
NoDep = _simpler.NoDep

from .build import build_callable, example, examples_dir, include_dir  # noqa: E402,F401
