"""A minimal fake `torch` for the stepwatch shim tests (not the real PyTorch)."""
IS_FAKE = True
__version__ = "0.0.0+fake"

from . import optim, profiler  # noqa: E402,F401
