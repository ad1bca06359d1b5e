"""Shared helpers for the Python shim tests.

The built artifacts come from the environment (set by tests/python/python.cmake):
  STEPWATCH_TEST_LIBRARY     libstepwatch.so
  STEPWATCH_TEST_FAKE_CUPTI  libstepwatch_fake_cupti.so (tests/live/fake_cupti/fake_cupti.h)
  STEPWATCH_TEST_CLI         the C++ `stepwatch` executable
Tests needing one of them skip when it is not set. Anything that loads the real library runs in
a subprocess with its own temporary STEPWATCH_OUTPUT_DIR: the library's session is per process.
"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHIM_SRC = os.path.join(REPO, "python_shim", "src")
FAKES = os.path.join(HERE, "fakes")

if SHIM_SRC not in sys.path:
    sys.path.insert(0, SHIM_SRC)

def _absolute(variable):
    # Absolute, so that the README's relative paths keep working in children run from a temp dir.
    value = os.environ.get(variable)
    return os.path.abspath(value) if value else None


LIBRARY = _absolute("STEPWATCH_TEST_LIBRARY")
FAKE_CUPTI = _absolute("STEPWATCH_TEST_FAKE_CUPTI")
CLI = _absolute("STEPWATCH_TEST_CLI")

needs_library = unittest.skipUnless(LIBRARY and os.path.isfile(LIBRARY), "STEPWATCH_TEST_LIBRARY not set")
needs_fake_cupti = unittest.skipUnless(
    LIBRARY and FAKE_CUPTI and os.path.isfile(FAKE_CUPTI), "STEPWATCH_TEST_LIBRARY/STEPWATCH_TEST_FAKE_CUPTI not set")
needs_cli = unittest.skipUnless(CLI and os.path.isfile(CLI), "STEPWATCH_TEST_CLI not set")

# Variables that would make a child find or configure a library behind the test's back.
_SCRUBBED = ("STEPWATCH_LIBRARY", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "STEPWATCH_OUTPUT_DIR",
             "STEPWATCH_CUPTI_PATH", "STEPWATCH_ENABLE", "PYTHONWARNINGS")

# Prepended to child scripts that need GPU tracing: the fake libcupti stands in for CUPTI and the
# script calls InitializeInjection itself, as the CUDA driver would at cuInit.
GPU_TRACING_PRELUDE = """
import ctypes, os
_fake = ctypes.CDLL(os.environ["STEPWATCH_CUPTI_PATH"], mode=ctypes.RTLD_GLOBAL)
_fake.fake_cupti_reset()
assert ctypes.CDLL(os.environ["STEPWATCH_LIBRARY"]).InitializeInjection() == 1
"""

# Polls last_step() after a flush: a step is judged once it ended a flush period ago (the live
# pipeline's watermark margin), so flush() alone does not make the step that just ended visible.
WAIT_LAST_STEP = """
import time as _time
def wait_last_step(step_number, timeout_s=5.0):
    deadline = _time.monotonic() + timeout_s
    while _time.monotonic() < deadline:
        stepwatch.flush()
        s = stepwatch.last_step()
        if s is not None and s.step >= step_number:
            return s
        _time.sleep(0.05)
    return stepwatch.last_step()
"""


def child_env(library=None, output_dir=None, fake_cupti=False, extra=None, pythonpath=(SHIM_SRC,)):
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env["PYTHONPATH"] = os.pathsep.join(list(pythonpath) + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["STEPWATCH_LOG_LEVEL"] = env.get("STEPWATCH_LOG_LEVEL", "warn")
    if library:
        env["STEPWATCH_LIBRARY"] = library
        # Loaded by the shim, not injected: the library stays dormant unless asked for explicitly
        # (libtrace/src/live/activation.h). test_library's dormant test removes it again.
        env.setdefault("STEPWATCH_ENABLE", "1")
    if output_dir:
        env["STEPWATCH_OUTPUT_DIR"] = output_dir
    if fake_cupti:
        env["STEPWATCH_CUPTI_PATH"] = FAKE_CUPTI
        env["STEPWATCH_WARMUP_STEPS"] = "0"
    env["STEPWATCH_FLUSH_MS"] = "100"
    if extra:
        env.update(extra)
    return env


def run_python(code, env, timeout=60, args=()):
    return subprocess.run([sys.executable, "-c", code] + list(args), env=env, capture_output=True, text=True,
                          timeout=timeout)


def run_script(path, env, timeout=60, cwd=None):
    return subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)


def run_module(args, env, timeout=60):
    return subprocess.run([sys.executable, "-m", "stepwatch"] + list(args), env=env, capture_output=True, text=True,
                          timeout=timeout)


class TempDirTestCase(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="stepwatch-pytest-")
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def assertChildOk(self, proc):
        self.assertEqual(proc.returncode, 0, "child failed (rc %d)\nstdout:\n%s\nstderr:\n%s"
                         % (proc.returncode, proc.stdout, proc.stderr))


class Spy:
    """Stands in for `_lib.Library` (stepwatch._api._c): records every call, returns `results`."""

    def __init__(self, results=None, path="/spy/libstepwatch.so"):
        self.calls = []
        self.results = {"enabled": 1}
        self.results.update(results or {})
        self.path = path
        self.raising = set()

    def _call(self, name, *args):
        self.calls.append((name,) + args)
        if name in self.raising:
            import ctypes
            raise ctypes.ArgumentError("spy: %s fails" % name)
        return self.results.get(name, 0)

    def step_begin(self, n):
        return self._call("step_begin", n)

    def step_end(self):
        return self._call("step_end")

    def phase_push(self, name):
        return self._call("phase_push", name)

    def phase_pop(self):
        return self._call("phase_pop")

    def enabled(self):
        return self._call("enabled")

    def flush(self):
        return self._call("flush")

    def pause(self):
        return self._call("pause")

    def resume(self):
        return self._call("resume")

    def last_step(self, ptr):
        return self._call("last_step")

    def version(self):
        self.calls.append(("version",))
        return b"9.9.9"

    def names(self):
        return [c[0] for c in self.calls]


class SpyMixin:
    """Installs a Spy as the native library for the duration of each test."""

    def setUp(self):
        super().setUp()
        from stepwatch import _api

        self._api = _api
        self._saved_c = _api._c
        self._saved_open = _api._step_open
        self._saved_sources = set(_api._sources_seen)
        self.spy = Spy()
        _api._c = self.spy
        _api._step_open = False
        _api._sources_seen.clear()  # each test starts with no step source seen

    def tearDown(self):
        self._api._c = self._saved_c
        self._api._step_open = self._saved_open
        self._api._sources_seen.clear()
        self._api._sources_seen.update(self._saved_sources)
        super().tearDown()
