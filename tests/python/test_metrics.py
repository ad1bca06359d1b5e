"""The Prometheus metrics of the real libstepwatch.so (with the fake libcupti standing in for CUPTI):
a child process runs input-starved steps with STEPWATCH_METRICS_PORT and STEPWATCH_METRICS_TEXTFILE
set; this process scrapes the endpoint with a real HTTP client (urllib) and parses the body, and
the textfile written at exit, with prometheus_client's own parser (the format Prometheus accepts).
"""
import glob
import os
import socket
import subprocess
import sys
import unittest
import urllib.error
import urllib.request

import _support
from _support import TempDirTestCase, needs_fake_cupti

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # scripts/install-deps.sh installs it; without it these tests cannot judge the format
    text_string_to_metric_families = None

needs_parser = unittest.skipUnless(text_string_to_metric_families, "prometheus-client is not installed")

STEPS = 12
CHILD = _support.GPU_TRACING_PRELUDE + "import json, stepwatch, sys, time\n" + _support.WAIT_LAST_STEP + r"""
for i in range(%d):
    stepwatch.step()
    with stepwatch.phase("DataLoader"):
        time.sleep(0.030)
    time.sleep(0.010)
stepwatch.step_end()
s = wait_last_step(%d)
assert s is not None and s.step == %d, s
print("READY", flush=True)
sys.stdin.readline()  # the parent scrapes, then lets us exit (which writes the textfile once more)
""" % (STEPS, STEPS - 1, STEPS - 1)

CATEGORIES = {"compute", "comm_exposed", "copy_only", "input", "sync", "launch", "host", "other"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def samples(text):
    """{(sample name, ((label, value), ...)): value} over every family, and the families' types."""
    out, types = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out, types


class MetricsEndpointTest(TempDirTestCase):
    def check_exposition(self, text, rank):
        values, types = samples(text)
        r = ("rank", str(rank))

        def value(name, *labels):
            key = (name, tuple(sorted((r,) + labels)))
            self.assertIn(key, values, "%s%s missing from:\n%s" % (name, labels, text))
            return values[key]

        self.assertEqual(types.get("stepwatch_step_seconds"), "histogram")
        self.assertEqual(types.get("stepwatch_steps"), "counter")  # the parser drops _total from counter names
        steps = value("stepwatch_steps_total")
        self.assertGreaterEqual(steps, STEPS)
        self.assertEqual(value("stepwatch_judged_steps_total"), steps, "no warm-up with the fake CUPTI")
        self.assertEqual(value("stepwatch_step_seconds_count"), steps)
        self.assertEqual(value("stepwatch_step_seconds_bucket", ("le", "+Inf")), steps)
        self.assertLessEqual(value("stepwatch_step_seconds_bucket", ("le", "0.01")), value(
            "stepwatch_step_seconds_bucket", ("le", "0.1")), "buckets are cumulative")
        total = value("stepwatch_step_seconds_sum")
        self.assertGreater(total, 0.035 * STEPS)
        self.assertLess(total, 1.0 * steps)
        self.assertGreater(value("stepwatch_last_step_seconds"), 0.0)
        duty = value("stepwatch_gpu_duty_cycle")
        self.assertGreaterEqual(duty, 0.0)
        self.assertLessEqual(duty, 1.0)
        # The breakdown covers every category and adds up to the (traced) steps' wall time.
        parts = {c: value("stepwatch_step_breakdown_seconds_total", ("category", c)) for c in CATEGORIES}
        self.assertAlmostEqual(sum(parts.values()), total, delta=0.01 * total)
        self.assertGreater(parts["input"], 0.025 * STEPS, parts)
        # The starved steps are findings with a cost.
        self.assertGreaterEqual(value("stepwatch_findings_total", ("detector", "input_starvation")), 1)
        self.assertGreater(value("stepwatch_detector_cost_seconds_total", ("detector", "input_starvation")), 0.0)
        kinds = [k for (name, labels) in values if name == "stepwatch_dropped_records_total" for k in labels
                 if k[0] == "kind"]
        self.assertIn(("kind", "queue_full"), kinds)
        for (name, labels), v in values.items():
            if name == "stepwatch_dropped_records_total":
                self.assertGreaterEqual(v, 0)
        score = value("stepwatch_individual_score", ("signal", "step_time"))
        self.assertGreater(score, 0.0)
        self.assertLessEqual(score, 1.0)

    @needs_fake_cupti
    @needs_parser
    def test_endpoint_and_textfile_hold_valid_exposition_with_the_listed_metrics(self):
        port = free_port()
        # The port is offset by LOCAL_RANK: rank 1 on this node serves on base + 1.
        env = _support.child_env(library=_support.LIBRARY, output_dir=self.tmp, fake_cupti=True, extra={
            "STEPWATCH_METRICS_PORT": str(port - 1), "LOCAL_RANK": "1", "RANK": "1",
            "STEPWATCH_METRICS_TEXTFILE": os.path.join(self.tmp, "stepwatch.prom"), "STEPWATCH_LOG_LEVEL": "info"})
        child = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = child.stdout.readline()
            self.assertEqual(line.strip(), "READY", "child failed:\n" + child.stderr.read() if child.poll() else line)
            url = "http://127.0.0.1:%d/metrics" % port
            with urllib.request.urlopen(url, timeout=10) as response:
                self.assertEqual(response.status, 200)
                self.assertTrue(response.headers["Content-Type"].startswith("text/plain; version=0.0.4"))
                body = response.read().decode("utf-8")
            self.check_exposition(body, rank=1)
            with self.assertRaises(urllib.error.HTTPError) as missing:
                urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=10)
            self.assertEqual(missing.exception.code, 404)
            out, err = child.communicate("\n", timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
        self.assertEqual(child.returncode, 0, err)
        self.assertIn("[stepwatch][rank 1] metrics: Prometheus endpoint at http://127.0.0.1:%d/metrics" % port, err)
        files = glob.glob(os.path.join(self.tmp, "*.prom"))
        self.assertEqual([os.path.basename(f) for f in files], ["stepwatch.rank1.prom"])
        with open(files[0]) as f:
            self.check_exposition(f.read(), rank=1)

    @needs_fake_cupti
    def test_port_in_use_gives_one_line_and_the_job_goes_on(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            env = _support.child_env(library=_support.LIBRARY, output_dir=self.tmp, fake_cupti=True,
                                     extra={"STEPWATCH_METRICS_PORT": str(port), "LOCAL_RANK": "0"})
            proc = _support.run_python(CHILD.replace("sys.stdin.readline()", "pass"), env)
        self.assertChildOk(proc)
        lines = [l for l in proc.stderr.splitlines() if "metrics:" in l]
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertIn("cannot serve on 127.0.0.1:%d" % port, lines[0])


if __name__ == "__main__":
    unittest.main()
