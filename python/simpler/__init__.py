"""simpler: build and run task graphs on a simulated accelerator chip from Python.

Placeholder until the package's owner fills it in (docs/USAGE.md "Python").
"""
from . import _simpler  # noqa: F401

__version__ = _simpler.VERSION
