#!/usr/bin/env python3
"""The cost of the shim's calls, in ns/call (best of several timeit repeats).

    python3 tests/python/bench_noop.py [--library build/lib/libstepwatch.so]

Each mode runs in a fresh child process: "no-op" has no library at all (the cost every user pays
when stepwatch is not loaded; target <= 1 us for step()), "library" loads the real library on CPU
(no GPU tracing; the marks still go through the C API into the session's queues) with a temporary
STEPWATCH_OUTPUT_DIR. The library defaults to STEPWATCH_TEST_LIBRARY.
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM_SRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python_shim", "src")

CHILD = r"""
import ctypes, sys, timeit
import stepwatch
N = int(sys.argv[1])
def bench(stmt):
    return min(timeit.repeat(stmt, number=N, repeat=7, globals=globals())) / N * 1e9
p = stepwatch.phase("DataLoader")
rows = [
    ("stepwatch.step()", bench("stepwatch.step()")),
    ("stepwatch.step_begin()", bench("stepwatch.step_begin()")),
    ("with stepwatch.phase(name)", bench("with stepwatch.phase('DataLoader'): pass")),
    ("with <reused phase>", bench("with p: pass")),
]
if stepwatch.enabled():
    lib = ctypes.PyDLL(stepwatch.library_path())
    lib.stepwatch_step_begin.argtypes = [ctypes.c_int64]
    rows.append(("raw ctypes stepwatch_step_begin (PyDLL)", bench("lib.stepwatch_step_begin(-1)")))
    cdll = ctypes.CDLL(stepwatch.library_path())
    cdll.stepwatch_step_begin.argtypes = [ctypes.c_int64]
    rows.append(("raw ctypes stepwatch_step_begin (CDLL)", bench("cdll.stepwatch_step_begin(-1)")))
rows.append(("empty Python function call", bench("(lambda: None)()")))
for name, ns in rows:
    print("%-42s %8.1f ns/call" % (name, ns))
"""


def run(mode, library, number):
    env = {k: v for k, v in os.environ.items()
           if k not in ("STEPWATCH_LIBRARY", "CUDA_INJECTION64_PATH", "STEPWATCH_OUTPUT_DIR")}
    env["PYTHONPATH"] = SHIM_SRC
    env["STEPWATCH_LOG_LEVEL"] = "error"
    with tempfile.TemporaryDirectory(prefix="stepwatch-bench-") as out:
        if library:
            env["STEPWATCH_LIBRARY"] = library
            env["STEPWATCH_OUTPUT_DIR"] = out
        print("== %s (%s)" % (mode, library or "no library"))
        sys.stdout.flush()
        subprocess.run([sys.executable, "-c", CHILD, str(number)], env=env, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--library", default=os.environ.get("STEPWATCH_TEST_LIBRARY"))
    ap.add_argument("--number", type=int, default=200000, help="calls per timeit repeat")
    args = ap.parse_args()
    print("python %s" % sys.version.split()[0])
    run("no-op", None, args.number)
    if args.library:
        run("library", os.path.abspath(args.library), args.number)
    else:
        print("(no --library / STEPWATCH_TEST_LIBRARY: library figures skipped)")


if __name__ == "__main__":
    main()
