"""Live call sites: a Python program whose blocking call is made with the GIL released (ctypes
releases it, as torch does before every sync) gets the file:line of the user frame that made it
in its hidden_sync finding — read by the library from the thread's own frames, without the GIL.

The fake libcupti's faithful model plays the CUDA calls (tests/live/fake_cupti/fake_cupti.h):
fake_cupti_sim_stream_sync fires CUPTI's ENTER/EXIT callbacks on the calling thread, inside the
ctypes call made from log_metrics() below.
"""
import glob
import json
import os
import textwrap
import unittest

import _support
from _support import TempDirTestCase, needs_fake_cupti

SCRIPT = _support.GPU_TRACING_PRELUDE + textwrap.dedent("""
    import ctypes, threading, time
    import stepwatch
    launch = _fake.fake_cupti_sim_launch
    launch.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_int64, ctypes.c_int]
    sync = _fake.fake_cupti_sim_stream_sync
    sync.argtypes = [ctypes.c_uint32]

    def log_metrics(step):
        sync(7)  # SITE: the hidden sync
        time.sleep(0.004)  # logging the value while the GPU sits idle

    def forward():
        for _ in range(20):
            launch(b"gemm_kernel", 7, 1_000_000, 1)

    def train(steps):
        for step in range(steps):
            stepwatch.step()
            forward()
            log_metrics(step)
        stepwatch.step_end()

    train(10)
    stepwatch.flush()
""")


def site_line():
    for number, line in enumerate(SCRIPT.splitlines(), start=1):
        if "# SITE" in line:
            return number
    raise AssertionError("no SITE marker")


class LiveCallSitesTest(TempDirTestCase):
    @needs_fake_cupti
    def test_a_sync_made_with_the_gil_released_names_its_python_line(self):
        script = os.path.join(self.tmp, "train.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        out = os.path.join(self.tmp, "out")
        env = _support.child_env(library=_support.LIBRARY, output_dir=out, fake_cupti=True)
        env["STEPWATCH_LOG_LEVEL"] = "info"
        proc = _support.run_script(script, env, cwd=self.tmp)
        self.assertChildOk(proc)
        expected = "train.py:%d in log_metrics" % site_line()
        self.assertIn("call sites: Python %d.%d" % tuple(__import__("sys").version_info[:2]), proc.stderr)
        findings_files = glob.glob(os.path.join(out, "rank0-pid*", "findings.jsonl"))
        self.assertEqual(len(findings_files), 1)
        with open(findings_files[0]) as f:
            findings = [json.loads(line) for line in f if line.strip()]
        syncs = [x for x in findings if x.get("detector") == "hidden_sync"]
        self.assertTrue(syncs, proc.stderr)
        for x in syncs:
            sites = x["evidence"]["sites"]
            self.assertEqual(sites[0]["site"], expected, sites)
            self.assertEqual(sites[0]["calls"], 1, "the runtime call and its driver call are one host wait")
            self.assertNotIn("call", sites[0], "ctypes calls the library directly: no torch frame below")
        # The job log's line names it, and the exit summary lists the run's top site.
        self.assertIn("at %s (1 blocking call, " % expected, proc.stderr)
        self.assertRegex(proc.stderr, r"blocking call sites .*\n.*\s10\s+[\d.]+\s+[\d.]+\s+" + expected)
        self.assertRegex(proc.stderr, r"call sites 10 read \([\d.]+ us each\)")


if __name__ == "__main__":
    unittest.main()
