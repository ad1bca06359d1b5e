"""`python -m stepwatch` — the launcher and a bridge to the C++ `stepwatch` command.

    python -m stepwatch run [--output-dir D] [--library PATH] [--] CMD...
        Same behaviour as the C++ `stepwatch run`: sets CUDA_INJECTION64_PATH and
        NVTX_INJECTION64_PATH to the library (absolute path), STEPWATCH_OUTPUT_DIR when given, and
        execs CMD. Exit 2 when the library is not found, 127 when CMD cannot be run. The library:
        --library, else the package's search (STEPWATCH_LIBRARY, CUDA_INJECTION64_PATH, next to the
        package / install prefix).
    python -m stepwatch analyze ...
    python -m stepwatch detectors
        Run by the C++ `stepwatch` (<library dir>/../bin/stepwatch, the install prefix's bin/, or
        PATH), with the same arguments, exit code and output.
"""
import os
import shutil
import sys

from . import _lib

USAGE = """\
usage: python -m stepwatch run [--output-dir D] [--library PATH] [--] CMD...
       python -m stepwatch analyze [options] FILE|DIR...   (the C++ `stepwatch analyze`)
       python -m stepwatch detectors                       (the C++ `stepwatch detectors`)

run: sets CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH to libstepwatch.so (and
STEPWATCH_OUTPUT_DIR with --output-dir), then execs CMD.
Example: python -m stepwatch run -- torchrun --nproc_per_node=8 train.py
"""

_DELEGATED = ("analyze", "detectors", "--version")


def _error(message, code):
    sys.stderr.write("stepwatch: error: %s\n" % message)
    return code


def run(args):
    output_dir = None
    library = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in ("-h", "--help"):
            sys.stdout.write(USAGE)
            return 0
        if a in ("--output-dir", "--library"):
            if i + 1 >= len(args):
                return _error("%s needs a value" % a, 2)
            value = args[i + 1]
            i += 2
        elif a.startswith("--output-dir=") or a.startswith("--library="):
            a, value = a.split("=", 1)
            i += 1
        elif a.startswith("-"):
            return _error("unknown option %s (see python -m stepwatch run --help)" % a, 2)
        else:
            break  # the command starts here; its own options follow
        if a == "--output-dir":
            output_dir = value
        else:
            library = value
    command = args[i:]
    if not command:
        return _error("no command given (python -m stepwatch run -- CMD...)", 2)

    lib = library if library else _lib.find_library()
    if not lib or not os.path.isfile(lib):
        where = " at " + lib if lib else ""
        return _error("libstepwatch.so not found%s (set STEPWATCH_LIBRARY, build with the CUDA toolkit, "
                      "or pass --library PATH)" % where, 2)
    lib = os.path.abspath(lib)
    # One library for both injection points: the driver and every NVTX instance load the same file.
    os.environ["CUDA_INJECTION64_PATH"] = lib
    os.environ["NVTX_INJECTION64_PATH"] = lib
    if output_dir:
        os.environ["STEPWATCH_OUTPUT_DIR"] = output_dir
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(command[0], command)
    except OSError as e:
        return _error("cannot run %s: %s" % (command[0], e.strerror or e), 127)
    return 127  # not reached


def find_cli():
    """The C++ `stepwatch` executable, or None."""
    # In the wheel (pip install .) the tool sits in the package itself.
    candidates = [os.path.join(_lib._PACKAGE_DIR, "bin", "stepwatch")]
    lib = _lib.find_library()
    if lib:
        lib_dir = os.path.dirname(os.path.realpath(lib))
        candidates.append(os.path.join(lib_dir, os.pardir, "bin", "stepwatch"))
    candidates.append(os.path.join(_lib._PREFIX_DIR, "bin", "stepwatch"))
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.normpath(c)
    # On PATH, but never a `stepwatch` console script (this very launcher: it would call itself).
    found = shutil.which("stepwatch")
    if found:
        try:
            with open(found, "rb") as f:
                if f.read(2) == b"#!":
                    return None
        except OSError:
            return None
    return found


def delegate(args):
    cli = find_cli()
    if cli is None:
        return _error("the stepwatch command-line tool was not found (looked next to libstepwatch.so, in the "
                      "install prefix and on PATH); build it (target stepwatch_cli) or install stepwatch with "
                      "`cmake --install`", 2)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execv(cli, [cli] + list(args))
    except OSError as e:
        return _error("cannot run %s: %s" % (cli, e.strerror or e), 127)
    return 127  # not reached


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0 if args else 2
    if args[0] == "run":
        return run(args[1:])
    if args[0] in _DELEGATED:
        return delegate(args)
    return _error("unknown command %r\n%s" % (args[0], USAGE), 2)


if __name__ == "__main__":
    sys.exit(main())
