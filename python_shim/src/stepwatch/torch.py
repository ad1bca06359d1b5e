"""PyTorch integration: `stepwatch.torch.watch(optimizer, loader)`.

    import stepwatch.torch
    w = stepwatch.torch.watch(optimizer, loader)
    for x, y in w.loader:          # next() runs inside a "DataLoader" phase: data-wait evidence
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()           # the post-hook ends this step and begins the next
    w.close()                      # optional: removes the hooks

What watch() installs (each undone by close()):
  - an optimizer step post-hook calling stepwatch.step() (one step per optimizer.step());
  - a wrapped loader (`w.loader`) whose iterator runs next() inside phase("DataLoader"), which the
    default STEPWATCH_DATA_PATTERN matches: direct input-starvation evidence;
  - a gc.callbacks entry timing every collection as a "gc" phase;
  - torch.profiler.profile wrappers pausing stepwatch while a profiler traces (CUPTI has a single
    subscriber) and resuming it after the last one stops (see "torch.profiler" below);
  - profile.step() as a step mark (profiler_steps=True): torch.profiler's ProfilerStep#N is a
    Kineto RecordFunction, not an NVTX range, so it never reaches the live library by itself.
    One source wins: profile.step() marks steps only while neither explicit stepwatch.step()
    calls nor the optimizer hook have (those two mark together, as before). C-API marks outrank
    NVTX step ranges in the pipeline: pass profiler_steps=False to keep NVTX `step` ranges as the
    source while a profiler object steps.

torch is imported only when watch() patches the profiler, by absolute name: this module is
`stepwatch.torch`, never the real `torch`.
"""
import gc as _gc
import importlib
import threading

from . import _api

DATA_PHASE = "DataLoader"
GC_PHASE = "gc"


class WatchedLoader:
    """An iterable wrapping `loader`: iter() and every next() run inside a data phase.

    Attributes (batch_size, dataset, sampler, ...) and len() are the wrapped loader's.
    """

    def __init__(self, loader, phase_name=DATA_PHASE):
        self._loader = loader
        self._raw = _api._phase_name(phase_name)
        self._active = True

    def __iter__(self):
        if not self._active or _api._c is None:
            return iter(self._loader)
        # Creating the iterator starts DataLoader workers (or resets persistent ones): data wait too.
        with _api._Phase(self._raw):
            it = iter(self._loader)
        return _WatchedIterator(it, self)

    def __len__(self):
        return len(self._loader)

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_loader", "_raw", "_active"):
            raise AttributeError(name)
        return getattr(self._loader, name)

    def __repr__(self):
        return "WatchedLoader(%r)" % (self._loader,)


class _WatchedIterator:
    __slots__ = ("_it", "_owner")

    def __init__(self, it, owner):
        self._it = it
        self._owner = owner

    def __iter__(self):
        return self

    def __next__(self):
        c = _api._c
        if c is None or not self._owner._active:
            return next(self._it)
        try:
            c.phase_push(self._owner._raw)
        except Exception:
            pass
        try:
            return next(self._it)
        finally:
            try:
                c.phase_pop()
            except Exception:
                pass

    def __len__(self):
        return len(self._it)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._it, name)


def wrap_loader(loader, phase_name=DATA_PHASE):
    """`loader` with every fetch timed as a data phase (see WatchedLoader)."""
    return WatchedLoader(loader, phase_name)


# ---- GC -----------------------------------------------------------------------------------------

_GC_RAW = GC_PHASE.encode()
_gc_users = [0]  # open watch() handles with gc=True; the callback is installed once


def _gc_callback(phase, info):
    # Runs inside the collector, on the thread that triggered it: start and stop pair on one thread.
    c = _api._c
    if c is None:
        return
    try:
        if phase == "start":
            c.phase_push(_GC_RAW)
        elif phase == "stop":
            c.phase_pop()
    except Exception:
        pass


def _install_gc():
    if _gc_callback not in _gc.callbacks:
        _gc.callbacks.append(_gc_callback)
    _gc_users[0] += 1


def _remove_gc():
    _gc_users[0] -= 1
    if _gc_users[0] <= 0:
        _gc_users[0] = 0
        try:
            _gc.callbacks.remove(_gc_callback)
        except ValueError:
            pass



# ---- torch.profiler -----------------------------------------------------------------------------
# One patch per process, shared by every watch() (reference-counted): stepwatch is paused when the
# first profiler takes CUPTI and resumed when the last one gives it back. The class attributes are
# restored when the last watcher closes and no profiler is running.
#
# Where: torch.profiler.profile's prepare_trace (Kineto enables its CUPTI activities there) and
# stop_trace (Kineto is done with CUPTI), both defined on _KinetoProfile since torch 1.9. start()
# calls prepare_trace + start_trace and stop() calls stop_trace, and a profiler with a schedule
# calls them only around its warm-up/active windows: so a whole training loop wrapped in
# `with profile(schedule=...)` pauses stepwatch only while Kineto actually traces. Without those
# methods, start/stop (entered by __enter__/__exit__) are patched instead.

_MISSING = object()
_prof_lock = threading.RLock()
_prof_state = {
    "cls": None,         # the patched class (torch.profiler.profile)
    "saved": {},         # method name -> the class's own attribute before patching (_MISSING: inherited)
    "users": 0,          # open watch() handles that asked for the profiler patch
    "running": set(),    # id() of profilers between taking CUPTI and giving it back
    "paused": False,     # whether our pause() succeeded (then the last stop resumes)
}
_PATCH_POINTS = (("prepare_trace", "stop_trace"), ("start", "stop"))
_profiler_steps = [0]  # open watch() handles with profiler_steps=True


def _profiler_started(prof):
    with _prof_lock:
        running = _prof_state["running"]
        if id(prof) in running:
            return
        running.add(id(prof))
        if len(running) == 1:
            _prof_state["paused"] = _api.pause() == _api.OK


def _profiler_stopped(prof):
    with _prof_lock:
        running = _prof_state["running"]
        if id(prof) not in running:
            return
        running.discard(id(prof))
        if not running:
            if _prof_state["paused"]:
                _prof_state["paused"] = False
                _api.resume()
            if _prof_state["users"] == 0:
                _unpatch_profiler_locked()


def _make_begin(orig):
    def begin(self, *args, **kwargs):
        if _prof_state["users"] > 0:
            _profiler_started(self)  # before Kineto touches CUPTI
        try:
            return orig(self, *args, **kwargs)
        except BaseException:
            _profiler_stopped(self)
            raise

    begin.__wrapped__ = orig
    begin._stepwatch_patch = True
    return begin


def _make_end(orig):
    def end(self, *args, **kwargs):
        try:
            return orig(self, *args, **kwargs)
        finally:
            _profiler_stopped(self)  # after Kineto released CUPTI (also when it raised)

    end.__wrapped__ = orig
    end._stepwatch_patch = True
    return end


def _make_step(orig):
    def step(self, *args, **kwargs):
        try:
            return orig(self, *args, **kwargs)
        finally:
            # After the profiler's own step: its schedule moves first, then our step begins.
            if _profiler_steps[0] > 0:
                _api._mark_step("profiler")

    step.__wrapped__ = orig
    step._stepwatch_patch = True
    return step


def _patch_profiler():
    """True when torch.profiler.profile is (now) patched; False without torch."""
    try:
        profiler = importlib.import_module("torch.profiler")
        cls = profiler.profile
    except Exception:
        return False
    with _prof_lock:
        if _prof_state["cls"] is None:
            begin_name, end_name = next(
                ((b, e) for b, e in _PATCH_POINTS if callable(getattr(cls, b, None)) and callable(getattr(cls, e, None))),
                (None, None))
            if begin_name is None:
                return False
            saved = {}
            points = [(begin_name, _make_begin), (end_name, _make_end)]
            if callable(getattr(cls, "step", None)):
                points.append(("step", _make_step))
            for name, make in points:
                orig = getattr(cls, name)
                if getattr(orig, "_stepwatch_patch", False):
                    continue  # patched by another copy of this module: do not wrap twice
                saved[name] = cls.__dict__.get(name, _MISSING)
                setattr(cls, name, make(orig))
            _prof_state["cls"] = cls
            _prof_state["saved"] = saved
        _prof_state["users"] += 1
    return True


def _unpatch_profiler_locked():
    cls = _prof_state["cls"]
    if cls is None:
        return
    for name, original in _prof_state["saved"].items():
        current = cls.__dict__.get(name)
        if not getattr(current, "_stepwatch_patch", False):
            continue  # someone patched over ours: leave theirs (ours passes through once unused)
        if original is _MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, original)
    _prof_state["cls"] = None
    _prof_state["saved"] = {}


def _unpatch_profiler():
    with _prof_lock:
        _prof_state["users"] = max(0, _prof_state["users"] - 1)
        if _prof_state["users"] == 0 and not _prof_state["running"]:
            _unpatch_profiler_locked()


# ---- watch --------------------------------------------------------------------------------------


class Watch:
    """What watch() installed. `loader` is the wrapped loader (None when none was given).
    close() (or leaving a `with` block) undoes everything; it is idempotent."""

    def __init__(self):
        self.loader = None
        self._undo = []

    def close(self):
        undo, self._undo = self._undo, []
        for fn in reversed(undo):
            try:
                fn()
            except Exception:
                pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()
        return False


def _hook_optimizer(optimizer, w):
    register = getattr(optimizer, "register_step_post_hook", None)
    if callable(register):
        handle = register(lambda opt, args, kwargs: _api._mark_step("optimizer"))
        w._undo.append(handle.remove)
        return
    # torch < 2.0: wrap the instance's step().
    orig = getattr(optimizer, "step", None)
    if not callable(orig):
        raise TypeError("stepwatch.torch.watch: optimizer has neither register_step_post_hook nor step()")
    had_own = "step" in getattr(optimizer, "__dict__", {})
    state = {"on": True}

    def step(*args, **kwargs):
        result = orig(*args, **kwargs)
        if state["on"]:
            _api._mark_step("optimizer")
        return result

    optimizer.step = step

    def undo():
        state["on"] = False
        if optimizer.__dict__.get("step") is step:  # not re-wrapped by someone else since
            if had_own:
                optimizer.step = orig
            else:
                del optimizer.step

    w._undo.append(undo)


def watch(optimizer=None, loader=None, gc=True, profiler=True, data_phase=DATA_PHASE, profiler_steps=True):
    """Mark steps and time data waits, GC pauses and profiler sessions for stepwatch.

    optimizer: its step() ends one stepwatch step and begins the next (a step post-hook).
    loader:    any iterable (a torch DataLoader); iterate over the returned handle's `.loader`.
    gc:        time every garbage collection as a "gc" phase.
    profiler:  pause stepwatch while a torch.profiler.profile traces (resumed after it stops).
    profiler_steps: with profiler, torch.profiler's profile.step() marks a step — when neither
               explicit stepwatch.step() calls nor the optimizer hook do (one source wins).
    Returns a Watch handle; close() undoes everything.
    """
    w = Watch()
    try:
        if optimizer is not None:
            _hook_optimizer(optimizer, w)
        if loader is not None:
            wrapped = WatchedLoader(loader, data_phase)
            w.loader = wrapped
            w._undo.append(lambda: setattr(wrapped, "_active", False))
        if gc:
            _install_gc()
            w._undo.append(_remove_gc)
        if profiler and _patch_profiler():
            w._undo.append(_unpatch_profiler)
            if profiler_steps:
                _profiler_steps[0] += 1
                w._undo.append(lambda: _profiler_steps.__setitem__(0, max(0, _profiler_steps[0] - 1)))
    except BaseException:
        w.close()
        raise
    return w
