"""`python -m stepwatch run` (the launcher) and `python -m stepwatch analyze|detectors` (delegated to
the C++ CLI): same environment, same exec, same exit codes as the C++ `stepwatch run`."""
import glob
import json
import os
import sys
import unittest

import _support
from _support import TempDirTestCase, needs_cli, needs_fake_cupti, needs_library

PRINT_ENV = ("import os, json; print(json.dumps({k: os.environ.get(k) for k in "
             "('CUDA_INJECTION64_PATH', 'NVTX_INJECTION64_PATH', 'STEPWATCH_OUTPUT_DIR')}))")


def _last_json(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


class LauncherTest(TempDirTestCase):
    def _fake_library(self):
        # The launcher only needs a file to point at; loading it is the child's business. Loading
        # this one in the launcher itself fails quietly (a warning, then no-op).
        path = os.path.join(self.tmp, "lib", "libstepwatch.so")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, "w").close()
        return path

    @needs_library
    def test_acceptance_prints_the_library_path(self):
        # STEPWATCH_LIBRARY=<so> python -m stepwatch run -- python -c "...print(CUDA_INJECTION64_PATH)"
        proc = _support.run_module(
            ["run", "--", sys.executable, "-c", "import os;print(os.environ['CUDA_INJECTION64_PATH'])"],
            _support.child_env(library=_support.LIBRARY))
        self.assertChildOk(proc)
        self.assertEqual(proc.stdout.strip(), os.path.abspath(_support.LIBRARY))

    def test_sets_both_injection_variables_and_the_output_dir(self):
        lib = self._fake_library()
        out_dir = os.path.join(self.tmp, "out")
        for args in (["run", "--output-dir", out_dir, "--", sys.executable, "-c", PRINT_ENV],
                     ["run", "--output-dir=" + out_dir, sys.executable, "-c", PRINT_ENV]):
            proc = _support.run_module(args, _support.child_env(library=lib))
            self.assertChildOk(proc)
            self.assertEqual(_last_json(proc.stdout), {"CUDA_INJECTION64_PATH": lib, "NVTX_INJECTION64_PATH": lib,
                                                       "STEPWATCH_OUTPUT_DIR": out_dir})

    def test_library_option_and_relative_paths(self):
        lib = self._fake_library()
        env = _support.child_env()
        proc = _support.run_module(["run", "--library", os.path.relpath(lib), "--", sys.executable, "-c", PRINT_ENV],
                                   env)
        self.assertChildOk(proc)
        self.assertEqual(_last_json(proc.stdout)["CUDA_INJECTION64_PATH"], os.path.abspath(lib))
        self.assertIsNone(_last_json(proc.stdout)["STEPWATCH_OUTPUT_DIR"])

    def test_command_options_are_the_commands(self):
        # Without `--`, option parsing stops at the command: its own options pass through untouched.
        lib = self._fake_library()
        proc = _support.run_module(["run", "--library", lib, sys.executable, "-c", "import sys; print(sys.argv[1:])",
                                    "--output-dir", "x"], _support.child_env())
        self.assertChildOk(proc)
        self.assertEqual(proc.stdout.strip(), "['--output-dir', 'x']")

    def test_exit_codes(self):
        env = _support.child_env()
        missing = _support.run_module(["run", "--", sys.executable, "-c", "pass"], env)
        self.assertEqual(missing.returncode, 2)
        self.assertIn("libstepwatch.so not found", missing.stderr)
        lib = self._fake_library()
        no_command = _support.run_module(["run", "--library", lib], env)
        self.assertEqual(no_command.returncode, 2)
        self.assertIn("no command", no_command.stderr)
        not_found = _support.run_module(["run", "--library", lib, "--", os.path.join(self.tmp, "no-such-program")],
                                        env)
        self.assertEqual(not_found.returncode, 127)
        self.assertIn("cannot run", not_found.stderr)
        bad_option = _support.run_module(["run", "--bogus", "--", "true"], env)
        self.assertEqual(bad_option.returncode, 2)
        unknown = _support.run_module(["frobnicate"], env)
        self.assertEqual(unknown.returncode, 2)
        self.assertEqual(_support.run_module(["run", "--help"], env).returncode, 0)

    @needs_cli
    def test_same_behaviour_as_the_cpp_launcher(self):
        import subprocess

        lib = self._fake_library()
        out_dir = os.path.join(self.tmp, "out")
        env = _support.child_env()
        args = ["run", "--library", lib, "--output-dir", out_dir, "--", sys.executable, "-c", PRINT_ENV]
        py = _support.run_module(args, env)
        cpp = subprocess.run([_support.CLI] + args, env=env, capture_output=True, text=True, timeout=60)
        self.assertChildOk(py)
        self.assertChildOk(cpp)
        self.assertEqual(_last_json(py.stdout), _last_json(cpp.stdout))
        # Failures exit alike too.
        py_missing = _support.run_module(["run", "--library", lib + ".missing", "--", "true"], env)
        cpp_missing = subprocess.run([_support.CLI, "run", "--library", lib + ".missing", "--", "true"], env=env,
                                     capture_output=True, text=True, timeout=60)
        self.assertEqual(py_missing.returncode, cpp_missing.returncode)
        py_noexec = _support.run_module(["run", "--library", lib, "--", os.path.join(self.tmp, "nope")], env)
        cpp_noexec = subprocess.run([_support.CLI, "run", "--library", lib, "--", os.path.join(self.tmp, "nope")],
                                    env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(py_noexec.returncode, cpp_noexec.returncode)

    @needs_library
    def test_the_launched_job_marks_steps_through_the_injected_library(self):
        # Under `run`, the child's `import stepwatch` finds the library through
        # CUDA_INJECTION64_PATH: the very file the CUDA driver would load (one session).
        code = "import json, os, stepwatch, time\n" + _support.WAIT_LAST_STEP + (
            "assert stepwatch.library_path() == os.environ['CUDA_INJECTION64_PATH']\n"
            "stepwatch.step(); time.sleep(0.01); stepwatch.step()\n"
            "print(json.dumps(wait_last_step(0).__dict__))\n")
        out_dir = os.path.join(self.tmp, "out")
        env = _support.child_env(extra={"STEPWATCH_LIBRARY": _support.LIBRARY})
        proc = _support.run_module(["run", "--output-dir", out_dir, "--", sys.executable, "-c", code], env)
        self.assertChildOk(proc)
        self.assertGreaterEqual(_last_json(proc.stdout)["duration_ms"], 9.0)
        self.assertEqual(len(glob.glob(os.path.join(out_dir, "rank0-pid*"))), 1)


ANALYZE_FIXTURE = _support.GPU_TRACING_PRELUDE + "import stepwatch, time\n" + _support.WAIT_LAST_STEP + r"""
for i in range(2):
    stepwatch.step()
    with stepwatch.phase("DataLoader"):
        time.sleep(0.030)
    time.sleep(0.005)
stepwatch.step_end()
wait_last_step(1)
"""


class AnalyzeDelegationTest(TempDirTestCase):
    @needs_cli
    @needs_library
    def test_detectors_and_help_come_from_the_cpp_cli(self):
        import subprocess

        # The CLI next to the library: <lib>/../bin/stepwatch, as in the build tree and an install.
        expected_cli = os.path.normpath(os.path.join(os.path.dirname(_support.LIBRARY), os.pardir, "bin", "stepwatch"))
        if not os.path.samefile(expected_cli, _support.CLI):
            self.skipTest("the CLI is not next to the library in this build")
        env = _support.child_env(library=_support.LIBRARY)
        for args in (["detectors"], ["analyze", "--help"]):
            py = _support.run_module(args, env)
            cpp = subprocess.run([_support.CLI] + args, env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(py.returncode, cpp.returncode, py.stderr)
            self.assertEqual(py.stdout.replace(expected_cli, _support.CLI), cpp.stdout)
        self.assertIn("input_starvation", _support.run_module(["detectors"], env).stdout)

    @needs_cli
    @needs_fake_cupti
    def test_analyze_reads_a_flight_recorder_dump(self):
        import subprocess

        out_dir = os.path.join(self.tmp, "out")
        fixture = _support.run_python(ANALYZE_FIXTURE, _support.child_env(library=_support.LIBRARY,
                                                                          output_dir=out_dir, fake_cupti=True))
        self.assertChildOk(fixture)
        dumps = glob.glob(os.path.join(out_dir, "rank0-pid*", "dumps", "*.json.gz"))
        self.assertTrue(dumps, "no flight-recorder dump written")
        env = _support.child_env(library=_support.LIBRARY)
        py = _support.run_module(["analyze", "-q", "--json", "-", dumps[0]], env)
        cpp = subprocess.run([_support.CLI, "analyze", "-q", "--json", "-", dumps[0]], env=env, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(py.returncode, cpp.returncode)
        self.assertIn('"input_starvation"', py.stdout)

    def test_a_missing_cli_is_a_clear_error(self):
        env = _support.child_env()
        env["PATH"] = os.path.dirname(sys.executable)
        proc = _support.run_module(["analyze", "x.json"], env)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("command-line tool was not found", proc.stderr)


if __name__ == "__main__":
    unittest.main()
