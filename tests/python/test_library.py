"""The shim against the real libstepwatch.so on CPU: marks reach the C API and last_step() reflects
them; with the fake libcupti standing in for CUPTI, a "DataLoader" phase shows up as input idle
time, steps.jsonl is written and pause()/resume() release and take back the subscription.

Every case runs in its own process with its own STEPWATCH_OUTPUT_DIR (one session per process).
"""
import glob
import json
import os
import unittest

import _support
from _support import TempDirTestCase, needs_fake_cupti, needs_library

CPU_MARKS = "import json, os, stepwatch, time\n" + _support.WAIT_LAST_STEP + r"""
assert stepwatch.enabled(), "library loaded but not enabled"
assert stepwatch.library_path() == os.environ["STEPWATCH_LIBRARY"], stepwatch.library_path()
assert stepwatch.version() == "0.1.0", stepwatch.version()
assert stepwatch.last_step() is None
# No GPU tracing here: pause has nothing to release.
assert stepwatch.pause() == stepwatch.ERROR_DISABLED
assert stepwatch.step() == stepwatch.OK
time.sleep(0.020)
assert stepwatch.step() == stepwatch.OK
with stepwatch.phase("data"):
    pass
s = wait_last_step(0)
assert s is not None, "no step analyzed"
print(json.dumps(s.__dict__))
"""


class CpuLibraryTest(TempDirTestCase):
    @needs_library
    def test_marks_reach_the_library_and_last_step_reflects_them(self):
        proc = _support.run_python(CPU_MARKS, _support.child_env(library=_support.LIBRARY, output_dir=self.tmp))
        self.assertChildOk(proc)
        s = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(s["step"], 0)
        self.assertEqual(s["rank"], 0)
        self.assertGreaterEqual(s["duration_ms"], 19.0)
        self.assertLess(s["duration_ms"], 80.0)
        # Without GPU tracing the whole step is host time, not judged.
        self.assertEqual(s["findings"], 0)
        self.assertEqual(len(glob.glob(os.path.join(self.tmp, "rank0-pid*"))), 1)

    @needs_library
    def test_stepwatch_enable_0_turns_calls_into_disabled(self):
        env = _support.child_env(library=_support.LIBRARY, output_dir=self.tmp, extra={"STEPWATCH_ENABLE": "0"})
        proc = _support.run_python(
            "import stepwatch\n"
            "assert stepwatch.library_path() is not None\n"
            "assert not stepwatch.enabled()\n"
            "assert stepwatch.step() == stepwatch.ERROR_DISABLED\n"
            "assert stepwatch.last_step() is None\n", env)
        self.assertChildOk(proc)

    @needs_library
    def test_loaded_but_not_injected_the_library_is_dormant(self):
        # Importing the shim (or linking stepwatch::stepwatch) alone: no session, no output folder,
        # no exit summary, every call a no-op.
        env = _support.child_env(library=_support.LIBRARY, output_dir=self.tmp)
        del env["STEPWATCH_ENABLE"]
        env["STEPWATCH_LOG_LEVEL"] = "info"
        proc = _support.run_python(
            "import stepwatch\n"
            "assert stepwatch.library_path() is not None\n"
            "assert not stepwatch.enabled()\n"
            "assert stepwatch.step() == stepwatch.ERROR_DISABLED\n", env)
        self.assertChildOk(proc)
        self.assertNotIn("[stepwatch]", proc.stderr)
        self.assertEqual(os.listdir(self.tmp), [])

    @needs_library
    def test_named_by_the_injection_variable_it_is_active_before_cuda_starts(self):
        # `stepwatch run` sets CUDA_INJECTION64_PATH to the library: a script marking steps before
        # its first CUDA call is traced from its first step (the driver calls in later).
        env = _support.child_env(library=_support.LIBRARY, output_dir=self.tmp)
        del env["STEPWATCH_ENABLE"]
        env["CUDA_INJECTION64_PATH"] = os.path.relpath(_support.LIBRARY)
        proc = _support.run_python(
            "import stepwatch\n"
            "assert stepwatch.enabled()\n"
            "assert stepwatch.step() == stepwatch.OK\n", env)
        self.assertChildOk(proc)
        self.assertEqual(len(glob.glob(os.path.join(self.tmp, "rank0-pid*"))), 1)

    @needs_library
    def test_phase_pop_without_push_is_reported_not_raised(self):
        proc = _support.run_python(
            "import stepwatch\nrc = stepwatch.phase_pop()\nassert rc < 0, rc\nprint('ok')\n",
            _support.child_env(library=_support.LIBRARY, output_dir=self.tmp))
        self.assertChildOk(proc)


GPU_TRACED = _support.GPU_TRACING_PRELUDE + "import json, stepwatch, time\n" + _support.WAIT_LAST_STEP + r"""
assert _fake.fake_cupti_is_subscribed() == 1
for i in range(3):
    stepwatch.step()
    with stepwatch.phase("DataLoader"):
        time.sleep(0.030)
    time.sleep(0.010)
stepwatch.step_end()
assert stepwatch.pause() == stepwatch.OK
paused = _fake.fake_cupti_is_subscribed()
assert stepwatch.resume() == stepwatch.OK
resumed = _fake.fake_cupti_is_subscribed()
s = wait_last_step(2)
print(json.dumps({"paused": paused, "resumed": resumed, "last": s.__dict__}))
"""


class GpuTracedLibraryTest(TempDirTestCase):
    @needs_fake_cupti
    def test_data_phase_is_input_idle_and_steps_are_written(self):
        proc = _support.run_python(GPU_TRACED, _support.child_env(library=_support.LIBRARY, output_dir=self.tmp,
                                                                  fake_cupti=True))
        self.assertChildOk(proc)
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(out["paused"], 0, "pause() did not release CUPTI")
        self.assertEqual(out["resumed"], 1, "resume() did not take CUPTI back")
        last = out["last"]
        self.assertEqual(last["step"], 2)
        self.assertGreaterEqual(last["idle_input_ms"], 25.0)
        self.assertLess(last["idle_input_ms"], last["duration_ms"])
        steps_files = glob.glob(os.path.join(self.tmp, "rank0-pid*", "steps.jsonl"))
        self.assertEqual(len(steps_files), 1)
        with open(steps_files[0]) as f:
            steps = [json.loads(line) for line in f if line.strip()]
        steps = [s for s in steps if s.get("type") == "step"]
        self.assertEqual([s["step"] for s in steps], [0, 1, 2])
        for s in steps:
            self.assertGreaterEqual(s["idle_ms"]["input"], 25.0, s)
        # Judged with GPU tracing: the starved steps are a finding in the job log.
        self.assertIn("input_starvation", proc.stderr)


if __name__ == "__main__":
    unittest.main()
