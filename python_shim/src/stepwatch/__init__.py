"""stepwatch — mark training steps and phases for the injected stepwatch library.

    import stepwatch
    for batch in loader:
        stepwatch.step()                 # ends the previous step, begins the next
        with stepwatch.phase("data"):    # a named host phase ("data" = input-starvation evidence)
            ...

With PyTorch, two lines mark steps and time the data waits:

    import stepwatch.torch
    w = stepwatch.torch.watch(optimizer, loader)   # then iterate over w.loader

The calls go to libstepwatch.so through its C API (libtrace/include/stepwatch/stepwatch.h). When
the library is not found every call is a cheap no-op; `stepwatch.enabled()` tells which.
"""
import importlib

from ._api import (
    ERROR_DISABLED,
    ERROR_INTERNAL,
    ERROR_INVALID_ARG,
    ERROR_NO_STEP,
    OK,
    StepSummary,
    enabled,
    flush,
    last_step,
    library_path,
    pause,
    phase,
    phase_pop,
    phase_push,
    resume,
    step,
    step_begin,
    step_end,
    version,
)

__version__ = "0.1.0"

__all__ = [
    "OK", "ERROR_DISABLED", "ERROR_INVALID_ARG", "ERROR_NO_STEP", "ERROR_INTERNAL",
    "StepSummary", "enabled", "flush", "last_step", "library_path", "pause", "phase", "phase_pop",
    "phase_push", "resume", "step", "step_begin", "step_end", "version",
]


def __getattr__(name):
    # `stepwatch.torch` and `stepwatch.integrations` on first use: `import stepwatch` stays cheap
    # and never imports torch.
    if name in ("torch", "integrations"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'stepwatch' has no attribute %r" % name)
