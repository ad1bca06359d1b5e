"""Finding and loading libstepwatch.so: ctypes over libtrace/include/stepwatch/stepwatch.h.

This module mirrors only that header. It never raises: a library that is missing, unloadable or
lacks a symbol leaves `load_default()` returning None, and every stepwatch call is then a no-op.

Search order (`find_library`):
  1. STEPWATCH_LIBRARY, when set (authoritative: no fallback when it names a missing file);
  2. CUDA_INJECTION64_PATH, when it names a libstepwatch*.so (the job runs under `stepwatch run`):
     loading the very file the CUDA driver loads gives the same dlopen handle, hence one session;
  3. next to the package: <pkg>/lib/libstepwatch.so, then <prefix>/lib[64]/libstepwatch.so where
     <prefix> is four levels above the package (both <prefix>/share/stepwatch/python/stepwatch and
     <prefix>/lib/python3/dist-packages/stepwatch lead there).
"""
import ctypes
import os
import warnings

LIBRARY_NAME = "libstepwatch.so"

# Module-relative search paths (step 3). Kept in one list so that the launcher and the docs agree.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_PREFIX_DIR = os.path.normpath(os.path.join(_PACKAGE_DIR, os.pardir, os.pardir, os.pardir, os.pardir))


class StepSummaryStruct(ctypes.Structure):
    """`stepwatch_step_summary`, field for field. `struct_size` first: set it before the call."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("step", ctypes.c_int64),
        ("rank", ctypes.c_int32),
        ("findings", ctypes.c_int32),
        ("duration_ms", ctypes.c_double),
        ("gpu_busy_pct", ctypes.c_double),
        ("compute_ms", ctypes.c_double),
        ("exposed_comm_ms", ctypes.c_double),
        ("copy_only_ms", ctypes.c_double),
        ("idle_input_ms", ctypes.c_double),
        ("idle_sync_ms", ctypes.c_double),
        ("idle_launch_ms", ctypes.c_double),
        ("idle_host_ms", ctypes.c_double),
        ("idle_other_ms", ctypes.c_double),
    ]


class Library:
    """The loaded C API. Attributes are ctypes functions with argtypes/restype set.

    The marks (step, phase) are bound through PyDLL: they never block (a short mutex at most) and
    never call back into Python, so keeping the GIL is safe and saves the release/re-acquire.
    flush/pause/resume can wait (a flush period, CUPTI subscribe/unsubscribe) and go through CDLL,
    which releases the GIL. Both load the same file, so dlopen returns one handle.
    """

    def __init__(self, path):
        self.path = path
        marks = ctypes.PyDLL(path)
        blocking = ctypes.CDLL(path)

        def bind(dll, name, restype, argtypes):
            fn = getattr(dll, name)  # AttributeError: not a stepwatch library (caught by the caller)
            fn.restype = restype
            fn.argtypes = argtypes
            return fn

        c_int, c_int64, c_char_p = ctypes.c_int, ctypes.c_int64, ctypes.c_char_p
        self.step_begin = bind(marks, "stepwatch_step_begin", c_int, [c_int64])
        self.step_end = bind(marks, "stepwatch_step_end", c_int, [])
        self.phase_push = bind(marks, "stepwatch_phase_push", c_int, [c_char_p])
        self.phase_pop = bind(marks, "stepwatch_phase_pop", c_int, [])
        self.enabled = bind(marks, "stepwatch_enabled", c_int, [])
        self.last_step = bind(marks, "stepwatch_last_step", c_int, [ctypes.POINTER(StepSummaryStruct)])
        self.version = bind(marks, "stepwatch_version", c_char_p, [])
        self.flush = bind(blocking, "stepwatch_flush", c_int, [])
        self.pause = bind(blocking, "stepwatch_pause", c_int, [])
        self.resume = bind(blocking, "stepwatch_resume", c_int, [])


def _is_stepwatch_library(path):
    return os.path.basename(path).startswith("libstepwatch")


def _package_candidates():
    return [
        os.path.join(_PACKAGE_DIR, "lib", LIBRARY_NAME),
        os.path.join(_PREFIX_DIR, "lib", LIBRARY_NAME),
        os.path.join(_PREFIX_DIR, "lib64", LIBRARY_NAME),
    ]


def _warn(message):
    # A warning, never an exception: `-W error` must not turn a missing library into an import failure.
    try:
        warnings.warn("stepwatch: " + message, RuntimeWarning, stacklevel=3)
    except Exception:
        pass


def find_library(environ=None, warn=False):
    """The absolute path of the libstepwatch.so to use, or None (see the module doc for the order)."""
    env = os.environ if environ is None else environ
    explicit = env.get("STEPWATCH_LIBRARY", "")
    injected = env.get("CUDA_INJECTION64_PATH", "")
    if explicit:
        if not os.path.isfile(explicit):
            if warn:
                _warn("STEPWATCH_LIBRARY=%s: no such file; stepwatch calls are no-ops" % explicit)
            return None
        path = os.path.abspath(explicit)
        if warn and injected and _is_stepwatch_library(injected) and os.path.isfile(injected):
            try:
                same = os.path.samefile(path, injected)
            except OSError:
                same = False
            if not same:
                _warn("STEPWATCH_LIBRARY=%s differs from CUDA_INJECTION64_PATH=%s: two copies of the "
                      "library mean two sessions (marks would not reach the traced one)" % (explicit, injected))
        return path
    if injected and _is_stepwatch_library(injected) and os.path.isfile(injected):
        return os.path.abspath(injected)
    for candidate in _package_candidates():
        if os.path.isfile(candidate):
            return candidate
    return None


# Why the library is not loaded, for `stepwatch.library_path()` users debugging a no-op.
load_error = None


def load(path):
    """A Library for `path`, or None when it cannot be loaded (the reason goes to `load_error`)."""
    global load_error
    try:
        return Library(path)
    except (OSError, AttributeError) as e:
        load_error = "%s: %s" % (path, e)
        _warn("cannot load %s (%s); stepwatch calls are no-ops" % (path, e))
        return None


def load_default():
    global load_error
    try:
        path = find_library(warn=True)
        if path is None:
            load_error = "libstepwatch.so not found (STEPWATCH_LIBRARY, CUDA_INJECTION64_PATH, next to the package)"
            return None
        return load(path)
    except Exception as e:  # never fail the import of the host program
        load_error = repr(e)
        return None
