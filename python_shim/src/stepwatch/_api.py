"""The Python face of the C API (libtrace/include/stepwatch/stepwatch.h).

Every call returns the C status code (OK, or a negative ERROR_* code) and never raises, except
TypeError for an argument of a clearly wrong type (the same with and without the library). When
the library is absent every call is a cheap no-op returning ERROR_DISABLED.

`_c` is the one indirection to the native library: None means "absent". Tests replace it with a
spy object that has the same attributes as `_lib.Library`.
"""
import ctypes
import operator
from dataclasses import dataclass

from . import _lib

OK = 0
ERROR_DISABLED = -1
ERROR_INVALID_ARG = -2
ERROR_NO_STEP = -3
ERROR_INTERNAL = -4

_c = _lib.load_default()

# Whether this process opened a step through step()/step_begin() and has not ended it. Only
# step() reads it; the C side keeps the authoritative state (a begin ends an open step anyway).
_step_open = False

# The shim's step sources: explicit step()/step_begin() calls and the optimizer hook of
# stepwatch.torch.watch(optimizer) (these two together, as before: a first stepwatch.step() then
# the hook is the documented pattern), and torch.profiler's profile.step(), which marks a step only
# while neither of the others has (a profiler stepping next to them would cut steps in two).
_sources_seen = set()

_INT64_MAX = (1 << 63) - 1


def _step_number(n):
    if n is None:
        return -1
    if isinstance(n, bool):
        raise TypeError("stepwatch: step number must be an int, not bool")
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("stepwatch: step number must be an int, not %s" % type(n).__name__) from None
    # Out of int64 range: let stepwatch count (a wrong number must not fail the job).
    return n if -_INT64_MAX <= n <= _INT64_MAX else -1


def _phase_name(name):
    if isinstance(name, str):
        return name.encode("utf-8", "replace")
    if isinstance(name, bytes):
        return name
    raise TypeError("stepwatch: phase name must be str or bytes, not %s" % type(name).__name__)


@dataclass(frozen=True)
class StepSummary:
    """The last analyzed step (`stepwatch_step_summary` without its struct_size)."""

    step: int
    rank: int
    findings: int
    duration_ms: float
    gpu_busy_pct: float
    compute_ms: float
    exposed_comm_ms: float
    copy_only_ms: float
    idle_input_ms: float
    idle_sync_ms: float
    idle_launch_ms: float
    idle_host_ms: float
    idle_other_ms: float


def enabled():
    """True when libstepwatch.so is loaded and active in this process (`stepwatch_enabled`)."""
    c = _c
    if c is None:
        return False
    try:
        return c.enabled() == 1
    except Exception:
        return False


def library_path():
    """The path of the loaded libstepwatch.so, or None when calls are no-ops."""
    c = _c
    return None if c is None else c.path


def version():
    """The library's version string (e.g. "0.1.0"), or None when the library is absent."""
    c = _c
    if c is None:
        return None
    try:
        v = c.version()
        return v.decode("utf-8", "replace") if v is not None else None
    except Exception:
        return None


def _mark_step(source, n=None):
    """step() on behalf of `source` ("optimizer" or "profiler"). The profiler's marks are ignored
    (ERROR_DISABLED) once explicit calls or the optimizer hook have marked a step."""
    if source == "profiler" and _sources_seen & {"user", "optimizer"}:
        return ERROR_DISABLED
    _sources_seen.add(source)
    return _step(n)


def step(n=None):
    """Ends the open step (if any) and begins the next. `n`: the step number; None lets stepwatch count.

    Call once per training iteration:

        for batch in loader:
            stepwatch.step()
            train_one_step(batch)

    Once an explicit call (or stepwatch.torch.watch's optimizer hook) marked a step,
    torch.profiler's profile.step() no longer does.
    """
    _sources_seen.add("user")
    return _step(n)


def _step(n=None):
    number = -1 if n is None else _step_number(n)
    c = _c
    if c is None:
        return ERROR_DISABLED
    global _step_open
    try:
        if _step_open:
            c.step_end()
        rc = c.step_begin(number)
    except Exception:
        _step_open = False
        return ERROR_INTERNAL
    _step_open = rc == OK
    return rc


def step_begin(n=None):
    """A step starts now (`stepwatch_step_begin`); a begin without an end ends the previous step."""
    _sources_seen.add("user")
    number = -1 if n is None else _step_number(n)
    c = _c
    if c is None:
        return ERROR_DISABLED
    global _step_open
    try:
        rc = c.step_begin(number)
    except Exception:
        return ERROR_INTERNAL
    if rc == OK:
        _step_open = True
    return rc


def step_end():
    """The current step ends now (`stepwatch_step_end`); ERROR_NO_STEP when none is open."""
    c = _c
    if c is None:
        return ERROR_DISABLED
    global _step_open
    _step_open = False
    try:
        return c.step_end()
    except Exception:
        return ERROR_INTERNAL


def phase_push(name):
    """A named host phase starts on this thread (`stepwatch_phase_push`). Pair with phase_pop()."""
    raw = _phase_name(name)
    c = _c
    if c is None:
        return ERROR_DISABLED
    try:
        return c.phase_push(raw)
    except Exception:
        return ERROR_INTERNAL


def phase_pop():
    """The innermost phase of this thread ends (`stepwatch_phase_pop`)."""
    c = _c
    if c is None:
        return ERROR_DISABLED
    try:
        return c.phase_pop()
    except Exception:
        return ERROR_INTERNAL


class _Phase:
    """`with stepwatch.phase(name):` — push on enter, pop on exit (also when the body raises)."""

    __slots__ = ("_raw",)

    def __init__(self, raw):
        self._raw = raw

    def __enter__(self):
        c = _c
        if c is not None:
            try:
                c.phase_push(self._raw)
            except Exception:
                pass
        return self

    def __exit__(self, exc_type, exc, tb):
        c = _c
        if c is not None:
            try:
                c.phase_pop()
            except Exception:
                pass
        return False


class _NoopPhase:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return False


_NOOP_PHASE = _NoopPhase()


def phase(name):
    """A context manager timing a named host phase on this thread.

    Names matching the data pattern (default `DataLoader|dataloader|^data$`) are direct
    input-starvation evidence; other names annotate gaps:

        with stepwatch.phase("data"):
            batch = next(it)
    """
    if _c is None:
        if isinstance(name, (str, bytes)):
            return _NOOP_PHASE
        _phase_name(name)  # raises the TypeError
    return _Phase(_phase_name(name))


def flush():
    """Deliver buffered records now and judge every complete step (`stepwatch_flush`). Bounded:
    returns within about one flush period; releases the GIL while it waits."""
    c = _c
    if c is None:
        return ERROR_DISABLED
    try:
        return c.flush()
    except Exception:
        return ERROR_INTERNAL


def pause():
    """Release CUPTI for another tool (torch.profiler) (`stepwatch_pause`). ERROR_DISABLED when
    stepwatch is not GPU-tracing."""
    c = _c
    if c is None:
        return ERROR_DISABLED
    try:
        return c.pause()
    except Exception:
        return ERROR_INTERNAL


def resume():
    """Take CUPTI back after pause() (`stepwatch_resume`)."""
    c = _c
    if c is None:
        return ERROR_DISABLED
    try:
        return c.resume()
    except Exception:
        return ERROR_INTERNAL


def last_step():
    """The last analyzed step as a StepSummary, or None (library absent, or no step analyzed yet).

    Steps are analyzed in the background; call flush() first to see the step that just ended.
    """
    c = _c
    if c is None:
        return None
    try:
        s = _lib.StepSummaryStruct()
        s.struct_size = ctypes.sizeof(_lib.StepSummaryStruct)
        if c.last_step(ctypes.byref(s)) != OK:
            return None
        return StepSummary(
            step=s.step,
            rank=s.rank,
            findings=s.findings,
            duration_ms=s.duration_ms,
            gpu_busy_pct=s.gpu_busy_pct,
            compute_ms=s.compute_ms,
            exposed_comm_ms=s.exposed_comm_ms,
            copy_only_ms=s.copy_only_ms,
            idle_input_ms=s.idle_input_ms,
            idle_sync_ms=s.idle_sync_ms,
            idle_launch_ms=s.idle_launch_ms,
            idle_host_ms=s.idle_host_ms,
            idle_other_ms=s.idle_other_ms,
        )
    except Exception:
        return None
