"""stepwatch.torch.watch and stepwatch.integrations against the fake `torch` (tests/python/fakes):
the optimizer hook, the loader wrapper, GC callbacks and the profiler wrapper, first with a spy in
place of the library, then end to end with the real library and the fake libcupti."""
import gc
import json
import os
import sys
import unittest

import _support
from _support import SpyMixin, TempDirTestCase, needs_fake_cupti

_saved_modules = {}


def setUpModule():
    if _support.FAKES not in sys.path:
        sys.path.insert(0, _support.FAKES)
    for name in list(sys.modules):
        if name.split(".")[0] in ("torch", "pytorch_lightning", "transformers", "lightning"):
            _saved_modules[name] = sys.modules.pop(name)
    import torch

    assert getattr(torch, "IS_FAKE", False), "the fake torch must shadow any real one here"


def tearDownModule():
    for name in list(sys.modules):
        if name.split(".")[0] in ("torch", "pytorch_lightning", "transformers"):
            del sys.modules[name]
    sys.modules.update(_saved_modules)
    if _support.FAKES in sys.path:
        sys.path.remove(_support.FAKES)


class OptimizerHookTest(SpyMixin, unittest.TestCase):
    def test_each_optimizer_step_ends_a_step_and_begins_the_next(self):
        import torch
        import stepwatch.torch as swt

        opt = torch.optim.SGD([1.0])
        w = swt.watch(opt, gc=False, profiler=False)
        for _ in range(3):
            opt.step()
        self.assertEqual(self.spy.calls, [("step_begin", -1), ("step_end",), ("step_begin", -1), ("step_end",),
                                          ("step_begin", -1)])
        w.close()
        w.close()  # idempotent
        self.spy.calls.clear()
        opt.step()
        self.assertEqual(self.spy.calls, [])
        self.assertEqual(opt.steps, 4)

    def test_optimizer_without_post_hooks_is_wrapped_and_unwrapped(self):
        import torch
        import stepwatch.torch as swt

        opt = torch.optim.OldOptimizer()
        with swt.watch(opt, gc=False, profiler=False):
            opt.step()
            self.assertEqual(self.spy.names(), ["step_begin"])
        self.assertNotIn("step", opt.__dict__)
        opt.step()
        self.assertEqual(self.spy.names(), ["step_begin"])
        self.assertEqual(opt.steps, 2)

    def test_not_an_optimizer(self):
        import stepwatch.torch as swt

        with self.assertRaises(TypeError):
            swt.watch(object(), gc=False, profiler=False)


class LoaderWrapperTest(SpyMixin, unittest.TestCase):
    def test_every_fetch_runs_inside_a_dataloader_phase(self):
        import torch.utils.data
        import stepwatch.torch as swt

        loader = torch.utils.data.DataLoader(list(range(6)), batch_size=2)
        w = swt.watch(loader=loader, gc=False, profiler=False)
        self.assertEqual(len(w.loader), 3)
        self.assertEqual(w.loader.batch_size, 2)  # attributes are the loader's
        batches = []
        for batch in w.loader:
            # Inside the loop body no phase is open: push/pop are balanced around each next().
            pushes = self.spy.names().count("phase_push")
            self.assertEqual(pushes, self.spy.names().count("phase_pop"))
            batches.append(batch)
        self.assertEqual(batches, [[0, 1], [2, 3], [4, 5]])
        # iter() + 3 batches + the final StopIteration, each a DataLoader phase.
        self.assertEqual(self.spy.calls.count(("phase_push", b"DataLoader")), 5)
        self.assertEqual(self.spy.names().count("phase_pop"), 5)
        w.close()
        self.spy.calls.clear()
        self.assertEqual(list(w.loader), [[0, 1], [2, 3], [4, 5]])
        self.assertEqual(self.spy.calls, [])

    def test_a_failing_fetch_still_pops(self):
        import torch.utils.data
        import stepwatch.torch as swt

        w = swt.watch(loader=torch.utils.data.DataLoader(list(range(4)), fail_at=1), gc=False, profiler=False)
        it = iter(w.loader)
        next(it)
        with self.assertRaises(RuntimeError):
            next(it)
        self.assertEqual(self.spy.names().count("phase_push"), self.spy.names().count("phase_pop"))

    def test_wrap_loader_with_a_custom_phase(self):
        import stepwatch.torch as swt

        self.assertEqual(list(swt.wrap_loader([1, 2], phase_name="data")), [1, 2])
        self.assertIn(("phase_push", b"data"), self.spy.calls)

    def test_no_library_means_the_plain_iterator(self):
        import stepwatch.torch as swt

        self._api._c = None
        loader = [1, 2, 3]
        w = swt.watch(loader=loader, gc=False, profiler=False)
        self.assertIs(type(iter(w.loader)), type(iter(loader)))
        self.assertEqual(list(w.loader), loader)


class GcCallbackTest(SpyMixin, unittest.TestCase):
    def test_collections_are_gc_phases(self):
        import stepwatch.torch as swt

        w = swt.watch(gc=True, profiler=False)
        try:
            gc.collect()
            self.assertIn(("phase_push", b"gc"), self.spy.calls)
            self.assertEqual(self.spy.names().count("phase_push"), self.spy.names().count("phase_pop"))
        finally:
            w.close()
        self.assertNotIn(swt._gc_callback, gc.callbacks)
        self.spy.calls.clear()
        gc.collect()
        self.assertEqual(self.spy.calls, [])

    def test_two_watchers_share_one_callback(self):
        import stepwatch.torch as swt

        a = swt.watch(profiler=False)
        b = swt.watch(profiler=False)
        self.assertEqual(gc.callbacks.count(swt._gc_callback), 1)
        a.close()
        self.assertIn(swt._gc_callback, gc.callbacks)
        b.close()
        self.assertNotIn(swt._gc_callback, gc.callbacks)


class ProfilerWrapperTest(SpyMixin, unittest.TestCase):
    def setUp(self):
        super().setUp()
        import torch.profiler

        self.profiler = torch.profiler
        self.profiler.EVENTS.clear()
        self.saved = dict(torch.profiler.profile.__dict__)

    def _log(self):
        return [c[0] for c in self.spy.calls if c[0] in ("pause", "resume")]

    def _timeline(self):
        # One list of our pause/resume and the profiler's prepare/start/stop, in call order.
        events = []
        self.spy.pause = lambda: (events.append("pause"), self.spy._call("pause"))[1]
        self.spy.resume = lambda: (events.append("resume"), self.spy._call("resume"))[1]
        self.profiler.EVENTS = events
        return events

    def test_pause_brackets_kinetos_cupti_use(self):
        import stepwatch.torch as swt

        events = self._timeline()
        with swt.watch(gc=False):
            with self.profiler.profile():
                pass
            prof = self.profiler.profile()
            prof.start()
            prof.stop()
        self.assertEqual(events, ["pause", "prepare", "start", "stop", "resume"] * 2)

    def test_a_scheduled_profiler_pauses_only_around_its_windows(self):
        import stepwatch.torch as swt

        events = self._timeline()
        with swt.watch(gc=False):
            prof = self.profiler.profile()
            # What a schedule(wait=1, warmup=1, active=1, repeat=2) does across its steps:
            for _ in range(2):
                prof.prepare_trace()   # warm-up begins
                prof.start_trace()     # active
                prof.stop_trace()      # window over, trace ready
        self.assertEqual(events, ["pause", "prepare", "start", "stop", "resume"] * 2)

    def test_nested_profilers_pause_once(self):
        import stepwatch.torch as swt

        with swt.watch(gc=False):
            a, b = self.profiler.profile(), self.profiler.profile()
            a.start()
            b.start()
            a.stop()
            self.assertEqual(self._log(), ["pause"])
            b.stop()
        self.assertEqual(self._log(), ["pause", "resume"])

    def test_no_resume_when_pause_failed(self):
        import stepwatch.torch as swt

        self.spy.results["pause"] = -1  # not GPU-tracing: nothing to release
        with swt.watch(gc=False):
            with self.profiler.profile():
                pass
        self.assertEqual(self._log(), ["pause"])

    def test_a_failing_start_resumes(self):
        import stepwatch.torch as swt

        with swt.watch(gc=False):
            with self.assertRaises(RuntimeError):
                self.profiler.profile(fail_start=True).start()
        self.assertEqual(self._log(), ["pause", "resume"])

    def test_patch_is_idempotent_and_undone_by_the_last_close(self):
        import stepwatch.torch as swt

        cls = self.profiler.profile
        a = swt.watch(gc=False)
        patched = cls.__dict__["prepare_trace"]
        self.assertTrue(getattr(patched, "_stepwatch_patch", False))
        self.assertTrue(getattr(cls.__dict__["stop_trace"], "_stepwatch_patch", False))
        b = swt.watch(gc=False)
        self.assertIs(cls.__dict__["prepare_trace"], patched)  # not wrapped twice
        a.close()
        self.assertIs(cls.__dict__["prepare_trace"], patched)
        b.close()
        self.assertEqual(dict(cls.__dict__), self.saved)  # inherited methods are inherited again
        with cls():
            pass
        self.assertEqual(self._log(), [])

    def test_close_while_a_profiler_runs_resumes_at_its_stop(self):
        import stepwatch.torch as swt

        w = swt.watch(gc=False)
        prof = self.profiler.profile()
        prof.start()
        w.close()
        self.assertIn("prepare_trace", self.profiler.profile.__dict__)
        prof.stop()
        self.assertEqual(self._log(), ["pause", "resume"])
        self.assertEqual(dict(self.profiler.profile.__dict__), self.saved)

    def test_start_stop_when_there_is_no_prepare_trace(self):
        import stepwatch.torch as swt

        modern = self.profiler.profile
        legacy = self.profiler.legacy_profile
        saved = dict(legacy.__dict__)
        self.profiler.profile = legacy
        try:
            events = self._timeline()
            with swt.watch(gc=False):
                with legacy():
                    pass
                self.assertTrue(getattr(legacy.__dict__["start"], "_stepwatch_patch", False))
            self.assertEqual(events, ["pause", "start", "stop", "resume"])
            self.assertEqual(dict(legacy.__dict__), saved)  # own methods restored
        finally:
            self.profiler.profile = modern


class ProfilerStepTest(SpyMixin, unittest.TestCase):
    """torch.profiler's profile.step() as the live step source (ProfilerStep#N is a Kineto
    RecordFunction, not an NVTX range: without this it never reaches the live library)."""

    def setUp(self):
        super().setUp()
        import torch.profiler

        self.profiler = torch.profiler

    def _steps(self):
        return [c[0] for c in self.spy.calls if c[0] in ("step_begin", "step_end")]

    def test_profile_step_marks_a_step_when_nothing_else_does(self):
        import stepwatch.torch as swt

        with swt.watch(gc=False):
            prof = self.profiler.profile()
            for _ in range(3):
                prof.step()
        self.assertEqual(self._steps(), ["step_begin", "step_end", "step_begin", "step_end", "step_begin"])

    def test_the_optimizer_hook_wins(self):
        import torch
        import stepwatch.torch as swt

        opt = torch.optim.SGD([1.0])
        with swt.watch(opt, gc=False):
            prof = self.profiler.profile()
            for _ in range(3):
                opt.step()
                prof.step()
        self.assertEqual(self._steps().count("step_begin"), 3)

    def test_explicit_steps_win(self):
        import stepwatch
        import stepwatch.torch as swt

        with swt.watch(gc=False):
            prof = self.profiler.profile()
            for _ in range(3):
                stepwatch.step()
                prof.step()
        self.assertEqual(self._steps().count("step_begin"), 3)

    def test_profiler_steps_off_and_after_close(self):
        import stepwatch.torch as swt

        with swt.watch(gc=False, profiler_steps=False):
            self.profiler.profile().step()
        self.assertEqual(self._steps(), [])
        prof = self.profiler.profile()
        with swt.watch(gc=False):
            pass
        prof.step()  # unpatched again
        self.assertEqual(self._steps(), [])


class IntegrationsTest(SpyMixin, unittest.TestCase):
    def test_lightning_callback(self):
        from stepwatch.integrations import StepwatchCallback

        import pytorch_lightning

        cb = StepwatchCallback()
        self.assertIsInstance(cb, pytorch_lightning.Callback)
        cb.on_train_start(None, None)
        for i in range(2):
            cb.on_train_batch_start(None, None, None, i)
        cb.on_validation_start(None, None)
        cb.on_train_batch_start(None, None, None, 2)
        cb.on_train_end(None, None)
        self.assertEqual(self.spy.names(), ["step_end", "step_begin", "step_end", "step_begin", "step_end",
                                            "step_begin", "step_end"])
        import stepwatch.torch as swt

        self.assertNotIn(swt._gc_callback, gc.callbacks)

    def test_transformers_callback(self):
        from stepwatch.integrations import StepwatchTrainerCallback

        import transformers

        cb = StepwatchTrainerCallback(gc=False)
        self.assertIsInstance(cb, transformers.TrainerCallback)
        cb.on_train_begin(None, None, None)
        cb.on_step_begin(None, None, None)
        cb.on_step_begin(None, None, None)
        cb.on_prediction_step(None, None, None)
        cb.on_train_end(None, None, None)
        self.assertEqual(self.spy.names(), ["step_end", "step_begin", "step_end", "step_begin", "step_end",
                                            "step_end"])

    def test_missing_framework_is_an_import_error(self):
        code = ("import stepwatch.integrations as i\n"
                "try:\n    i.StepwatchCallback\nexcept ImportError as e:\n    print('ImportError', e)\n")
        proc = _support.run_python(code, _support.child_env())
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("ImportError", proc.stdout)
        self.assertIn("PyTorch Lightning", proc.stdout)


E2E = _support.GPU_TRACING_PRELUDE + r"""
import json, time
import torch, torch.utils.data
import stepwatch, stepwatch.torch
""" + _support.WAIT_LAST_STEP + r"""
assert torch.IS_FAKE

class SlowData:
    def __len__(self): return 4
    def __getitem__(self, i):
        time.sleep(0.030)                # a starved input pipeline
        return i

opt = torch.optim.SGD([1.0])
w = stepwatch.torch.watch(opt, torch.utils.data.DataLoader(SlowData(), batch_size=1))
stepwatch.step()                         # the first step begins with the loop
for batch in w.loader:
    time.sleep(0.005)                    # "compute"
    opt.step()                           # ends this step, begins the next
subscribed = [_fake.fake_cupti_is_subscribed()]
with torch.profiler.profile():
    subscribed.append(_fake.fake_cupti_is_subscribed())
subscribed.append(_fake.fake_cupti_is_subscribed())
s = wait_last_step(3)
w.close()
print(json.dumps({"subscribed": subscribed, "last": s.__dict__}))
"""


class TorchEndToEndTest(TempDirTestCase):
    @needs_fake_cupti
    def test_watch_with_the_real_library(self):
        env = _support.child_env(library=_support.LIBRARY, output_dir=self.tmp, fake_cupti=True,
                                 pythonpath=(_support.SHIM_SRC, _support.FAKES))
        proc = _support.run_python(E2E, env)
        self.assertChildOk(proc)
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        # The profiler session released CUPTI and stepwatch took it back after.
        self.assertEqual(out["subscribed"], [1, 0, 1])
        last = out["last"]
        self.assertGreaterEqual(last["step"], 3)
        self.assertGreaterEqual(last["idle_input_ms"], 25.0, last)
        self.assertIn("input_starvation", proc.stderr)
        with open([os.path.join(d, "steps.jsonl") for d in
                   [os.path.join(self.tmp, n) for n in os.listdir(self.tmp)]][0]) as f:
            steps = [json.loads(line) for line in f if '"type":"step"' in line]
        self.assertGreaterEqual(len(steps), 4)


if __name__ == "__main__":
    unittest.main()
