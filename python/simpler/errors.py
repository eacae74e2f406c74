"""The exceptions simpler raises: one class per status (simpler/status.h).

Every failure of the library is a status: a stable negative number, a name
("SP_EKERNEL_FAULT") and a one-line hint. The binding raises the class of
the status, constructed as ``cls(status, message)``; each class sits under
a category (ArgumentError, KernelError, ...) so a caller can catch a whole
kind of failure, and the categories that have a builtin counterpart also
derive from it (ArgumentError is a ValueError, TimeoutError a builtin
TimeoutError).

A status's class is named by the status in CamelCase without ``SP_E`` plus
"Error": SP_EKERNEL_FAULT -> KernelFaultError, SP_EINVAL -> InvalError.
Where that name is its category's own (SP_EMODULE -> ModuleError,
SP_ECALLABLE -> CallableError, SP_ESTATE -> StateError, SP_ETIMEOUT ->
TimeoutError) the category is the status's class. ``by_status[code]`` and
``by_name["SP_E..."]`` find a class; a status this module does not know (a
newer library) raises Error itself.
"""
import builtins
import re

from . import _simpler

__all__ = [
    "Error", "ArgumentError", "DeviceMemoryError", "ModuleError", "CallableError",
    "KernelError", "OrchestrationError", "DeadlockError", "TimeoutError", "StateError",
    "DeviceError", "CompileError", "by_status", "by_name", "error_class",
]


class Error(Exception):
    """A failure of simpler: .status (int), .name, .hint, .message."""

    #: The status this class stands for; None for a category of several.
    status = None

    def __init__(self, status, message=""):
        status = int(status)
        name = _simpler.status_name(status)
        message = "" if message is None else str(message)
        # The library's messages may already start with the status name.
        if message.startswith(name + ": "):
            message = message[len(name) + 2:]
        super().__init__(status, message)
        self.status = status
        self.name = name
        self.hint = _simpler.status_hint(status)
        self.message = message

    def __str__(self):
        return f"{self.name}: {self.message}\n  hint: {self.hint}"

    def __reduce__(self):
        return (type(self), (self.status, self.message))


# ---- categories ---------------------------------------------------------------
class ArgumentError(Error, ValueError):
    """Bad arguments: a run's tensors or scalars, a task's, a signature."""


class DeviceMemoryError(Error):
    """Host or device memory: exhausted, a bad pointer, a range outside one."""


class ModuleError(Error):
    """A runtime module, or a binary in a callable, that cannot be used."""


class CallableError(Error):
    """A malformed callable blob, or an unknown callable id."""


class KernelError(Error):
    """A kernel crashed, ran past its timeout or wrote outside a tensor.

    .task, .kernel (its entry name), .func_id, .core and .device are parsed
    from the runtime's message ("device D: task T: kernel 'K' (func_id F)
    crashed on core C with SIGSEGV"); each is None where the message does
    not say.
    """

    def __init__(self, status, message=""):
        super().__init__(status, message)
        self.task, self.kernel, self.func_id, self.core, self.device = _parse_kernel(
            self.message)


class OrchestrationError(Error):
    """The orchestration failed, crashed, or built a graph past a limit."""


class DeadlockError(Error):
    """A run that could not make progress (window, heap, scope, control waits)."""


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 (simpler.TimeoutError)
    """A wait ran past its deadline (SP_ETIMEOUT)."""


class StateError(Error):
    """An operation the object's state does not allow (closed, stale)."""


class DeviceError(Error):
    """The device, its launch or the operating system failed."""


_KERNEL_RE = re.compile(r"kernel '([^']*)' \(func_id (-?\d+)\)")
_TASK_RE = re.compile(r"\btask (\d+)")
_CORE_RE = re.compile(r"\bcore (\d+)")
_DEVICE_RE = re.compile(r"\bdevice (\d+): ")


def _parse_kernel(message):
    """(task, kernel, func_id, core, device) from a kernel failure's message."""
    def num(regex):
        m = regex.search(message)
        return int(m.group(1)) if m else None

    kernel = func_id = None
    m = _KERNEL_RE.search(message)
    if m:
        kernel = m.group(1) if m.group(1) != "?" else None
        func_id = int(m.group(2)) if int(m.group(2)) >= 0 else None
    return num(_TASK_RE), kernel, func_id, num(_CORE_RE), num(_DEVICE_RE)


# ---- one class per status ------------------------------------------------------
# Status name (without SP_E) -> its category. Together these are every
# status of simpler/status.h but SP_OK (tests/python/test_errors.py checks).
_CATEGORY = {
    ArgumentError: ("INVAL", "DTYPE", "SHAPE", "ARGCOUNT", "TASK_ARGS", "FUNC_ID",
                    "ARG_SIGNATURE", "DEP", "PREDICATE", "L3_PLACEMENT"),
    DeviceMemoryError: ("NOMEM", "DEVMEM", "BADPTR", "DOUBLEFREE", "BOUNDS", "MAPPED",
                        "HEAP_TOO_SMALL"),
    ModuleError: ("MODULE", "MODULE_SYMBOL", "ABI", "CONTRACT", "KERNEL_LOAD",
                  "KERNEL_ENTRY"),
    CallableError: ("BLOB", "CALLABLE"),
    KernelError: ("KERNEL_FAULT", "KERNEL_TIMEOUT", "KERNEL_OVERRUN"),
    OrchestrationError: ("ORCH_FATAL", "ORCH_CRASH", "ORCH_THREAD", "SCOPE", "GRAPH_LIMIT",
                         "GRAPH_TASK"),
    DeadlockError: ("SCOPE_DEADLOCK", "HEAP_DEADLOCK", "WINDOW_DEADLOCK", "CONTROL_WAIT",
                    "TENSOR_RETIRED"),
    TimeoutError: ("TIMEOUT", "RANK_TIMEOUT"),
    StateError: ("STATE", "STALE", "REPLAY_MISS"),
    DeviceError: ("BUSY", "NOTSUP", "SYS", "GEOMETRY", "SLOT", "UNUSABLE", "LAUNCH",
                  "LAUNCH_PARTIAL", "STALL", "DUPLICATE", "RANK"),
}

by_status = {}
by_name = {}


def _class_name(short):
    return "".join(part.capitalize() for part in short.split("_")) + "Error"


def _define_classes():
    codes = {name: value for value, name, _hint in _simpler.statuses()}
    for category, shorts in _CATEGORY.items():
        for short in shorts:
            name = "SP_E" + short
            if name not in codes:  # an older library without this status
                continue
            cls_name = _class_name(short)
            if cls_name == category.__name__:
                cls = category
            else:
                cls = type(cls_name, (category,), {
                    "__doc__": f"{name}: {_simpler.status_hint(codes[name])}",
                    "__module__": __name__,
                })
                globals()[cls_name] = cls
                __all__.append(cls_name)
            cls.status = codes[name]
            by_status[codes[name]] = cls
            by_name[name] = cls


_define_classes()


class CompileError(InvalError):  # noqa: F821 (defined by _define_classes)
    """build_callable could not compile a source: the compiler's stderr is
    in the message (an ArgumentError with status SP_EINVAL)."""

    def __init__(self, status=None, message=""):
        super().__init__(InvalError.status if status is None else status, message)  # noqa: F821


def error_class(status):
    """The class simpler raises for `status` (Error for an unknown one)."""
    return by_status.get(int(status), Error)


def raise_status(status, message=""):
    """Raise the class of `status` with `message` (for Python code)."""
    raise error_class(status)(status, message)


_simpler._set_errors(by_status, Error)
