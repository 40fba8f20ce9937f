"""The `flagtree-profiler` command: runs a Python script, a module or pytest under one profiling
session and writes the profile when the target ends, however it ends (normal end, sys.exit,
exception, Ctrl-C, SIGTERM).

    flagtree-profiler [options] script.py [script args...]
    flagtree-profiler [options] --module package.module [module args...]
    flagtree-profiler [options] pytest [pytest args...]
    python -m flagtree.profiler.cli [options] ...

Options before the target belong to the profiler; everything after it reaches the target as is.
"""
import argparse
import builtins
import ctypes
import os
import runpy
import signal
import sys
import types

from . import ixkn as _ixkn
from . import session as _session
from .backends import KNOWN_BACKENDS, BackendUnavailable, implemented_backends

PROG = "flagtree-profiler"

EPILOG = """\
examples:
  flagtree-profiler examples/vector_add.py              # writes vector_add.hatchet
  flagtree-profiler -n runs/add -d trace train.py --steps 10   # runs/add.chrome_trace
  flagtree-profiler -c python model.py                  # kernels under <file>:<line>@<function>
  flagtree-profiler -b interpreter -k triton bench.py   # launch metadata via Triton's hook
  flagtree-profiler -n tests pytest -x tests/kernels    # profile a test run
  flagtree-profiler --module mypkg.bench --size 64      # like python -m mypkg.bench
  flagtree-profiler -m metrics=dram__bytes_read.sum,dram__bytes_write.sum app.py   # hardware counters
  flagtree-profiler --list-metrics [--chip GH100] [--submetrics]   # the metric names a GPU offers

The profile is written when the target ends, also after sys.exit, an uncaught exception,
Ctrl-C or SIGTERM; the command exits with the target's code (1 on an exception, 130 on
Ctrl-C, 143 on SIGTERM). The script's own flagtree.profiler.start()/finalize() calls defer
to the command's session. Without a GPU driver and without --backend, the command sets
TRITON_INTERPRET=1 so Triton's interpreter runs the kernels on the CPU and they are profiled
with host-measured times. View a profile with: flagtree-profiler-viewer NAME.hatchet
"""

# Options that take a value: the split between the profiler's options and the target needs them.
_VALUE_OPTIONS = {"-n", "--name", "-b", "--backend", "-c", "--context", "-d", "--data",
                  "-m", "--mode", "-k", "--hook", "--chip"} | _ixkn.VALUE_OPTIONS


class _UsageError(Exception):
    """A bad command line: reported as one `flagtree-profiler: error:` line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # argparse would print the whole usage first; one line reads better in scripts and logs.
        raise _UsageError(f"{message} (see {PROG} -h)")


def _parser():
    parser = _Parser(
        prog=PROG, allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter,
        usage=f"{PROG} [options] (script.py | --module MODULE | pytest) [args...]",
        description="Profile the Triton kernels of a Python script, module or pytest run.",
        epilog=EPILOG)
    parser.add_argument("-n", "--name", help="output path without extension (default: the script's "
                        "name without .py, the module's last part, or 'pytest')")
    parser.add_argument("-b", "--backend", help=f"profiling backend (default: chosen from Triton's "
                        f"target); implemented: {', '.join(implemented_backends())}; "
                        f"known: {', '.join(KNOWN_BACKENDS)}")
    parser.add_argument("-c", "--context", default="shadow", choices=_session.CONTEXTS,
                        help="how kernels are attributed: shadow = scopes and states (default), "
                             "python = the Python call stack")
    parser.add_argument("-d", "--data", default="tree", choices=_session.DATA_KINDS,
                        help="tree = NAME.hatchet call tree (default), trace = NAME.chrome_trace timeline")
    parser.add_argument("-m", "--mode", help="backend-specific collection mode (default: none)")
    parser.add_argument("-k", "--hook", choices=_session.HOOKS,
                        help="triton = also record launch metadata through Triton's launch hook")
    parser.add_argument("--list-metrics", action="store_true",
                        help="print the hardware metrics usable in -m metrics=<list> (nvidia) and exit")
    parser.add_argument("--chip", help="with --list-metrics: the chip, e.g. GH100 (default: GPU 0's)")
    parser.add_argument("--submetrics", action="store_true",
                        help="with --list-metrics: print every full name (base metric + submetric)")
    parser.add_argument("--module", metavar="MODULE",
                        help="run MODULE as with python -m MODULE; the arguments after it go to it")
    _ixkn.add_options(parser)
    return parser


def _split(argv):
    """(profiler options, target and its arguments): the target is the first bare word, or the
    word after --module or --; nothing after it is read as a profiler option."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv[:i], argv[i + 1:]
        if word == "--module":
            return argv[:i + 2], argv[i + 2:]
        if not word.startswith("-") or word == "-":
            return argv[:i], argv[i:]
        i += 2 if word in _VALUE_OPTIONS else 1
    return argv, []


def _parse(argv):
    """(options, kind, target, target args) with kind one of 'script', 'module', 'pytest'."""
    own, rest = _split(argv)
    options = _parser().parse_args(own)
    if options.list_metrics:
        return options, "list-metrics", None, rest
    if options.module is not None:
        return options, "module", options.module, rest
    if not rest:
        raise _UsageError(f"no script to run; usage: {PROG} [options] script.py [args...] (see {PROG} -h)")
    target, args = rest[0], rest[1:]
    if target == "pytest":
        return options, "pytest", target, args
    if not os.path.exists(target):
        raise _UsageError(f"can't open file {target!r}: no such file")
    return options, "script", target, args


def _default_name(kind, target):
    if kind == "pytest":
        return "pytest"
    if kind == "module":
        return target.rsplit(".", 1)[-1]
    base = os.path.basename(os.path.normpath(target))
    return base[:-3] if base.endswith(".py") else base


# --- choosing Triton's interpreter on a machine without a GPU ---

def _gpu_driver_present():
    """Whether torch.cuda.is_available() could be true: a CUDA (or ROCm HIP) driver loads.
    Loading the library initializes nothing, unlike importing torch and asking it."""
    for library in ("libcuda.so.1", "libamdhip64.so"):
        try:
            ctypes.CDLL(library)
            return True
        except OSError:
            pass
    return False


def _maybe_use_interpreter(options):
    """Sets TRITON_INTERPRET=1 when no GPU can run kernels and the user chose neither a backend nor
    an interpreter setting; must run before the target imports triton. True when it did."""
    if options.backend or os.environ.get("FLAGTREE_PROFILER_BACKEND", "").strip():
        return False
    if "TRITON_INTERPRET" in os.environ or _gpu_driver_present():
        return False
    os.environ["TRITON_INTERPRET"] = "1"
    return True


def _announce_backend(opened, set_interpret):
    if opened is None or opened.backend.name != "interpreter":
        return
    if set_interpret:
        _say("no GPU: set TRITON_INTERPRET=1 to profile Triton's interpreter; kernel times are host-measured")
    else:
        _say("profiling Triton's interpreter (TRITON_INTERPRET=1); kernel times are host-measured")


# --- running the target ---

def _run_script(path, args):
    """Runs a file as `python path args` would: argv, __main__, __file__, sys.path[0]. Executed here
    rather than through runpy so no runpy frames sit above the script in the python context."""
    if os.path.isdir(path) or (not path.endswith(".py") and _is_zip(path)):
        sys.argv = [path, *args]
        sys.path[0] = os.path.abspath(path)  # a directory or zip with __main__.py, as Python does
        runpy.run_path(path, run_name="__main__")
        return
    full = os.path.abspath(path)
    with open(full, "rb") as source:
        code = compile(source.read(), full, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=full, __builtins__=builtins, __cached__=None)
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(os.path.realpath(full))
    sys.modules["__main__"] = module  # pickling and multiprocessing look the script up there
    exec(code, module.__dict__)


def _is_zip(path):
    import zipfile

    return zipfile.is_zipfile(path)


def _run_module(name, args):
    sys.argv = [name, *args]  # runpy puts the module's file in argv[0], as python -m does
    sys.path[0] = os.getcwd()
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def _run_pytest(args):
    import pytest

    sys.argv = ["pytest", *args]
    code = pytest.main(list(args))
    if code:
        raise SystemExit(int(code))


def _run_target(kind, target, args):
    if kind == "script":
        _run_script(target, args)
    elif kind == "module":
        _run_module(target, args)
    else:
        _run_pytest(args)


def _on_sigterm(signum, frame):
    # Unwinds the target like sys.exit, so the finally-block still writes the profile.
    raise SystemExit(128 + signum)


def _install_sigterm():
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # main() called outside the main thread: signals can't be handled here
        return None


def _exit_code(error):
    """The status Python would end with after this exception, printing what it would print."""
    if isinstance(error, SystemExit):
        code = error.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)  # sys.exit("message") prints the message and exits 1
        return 1
    _print_traceback(error)
    return 130 if isinstance(error, KeyboardInterrupt) else 1


def _print_traceback(error):
    # Drop the frames of this command and runpy above the target, so the traceback starts at the
    # script's own code as when it runs directly.
    tb = error.__traceback__
    while tb is not None and _is_launcher_frame(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    # The default hook prints the exception's own __traceback__, not the tb argument.
    sys.excepthook(type(error), error.with_traceback(tb), tb)


def _is_launcher_frame(filename):
    return filename in (__file__, runpy.__file__) or filename.startswith("<frozen runpy")


def _run_profiled(kind, target, args):
    """Runs the target with SIGTERM turned into SystemExit; returns its exit status."""
    saved = (list(sys.argv), list(sys.path), sys.modules.get("__main__"))
    previous = _install_sigterm()
    try:
        _run_target(kind, target, args)
        return 0
    except BaseException as error:  # noqa: B902 - every way out must still write the profile
        return _exit_code(error)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        # The metadata written next records the command's own argv, not the script's.
        sys.argv, sys.path[:] = saved[0], saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]


def _finish(opened, code):
    """Writes the profile and says where; a failed write turns a clean exit into status 1."""
    try:
        _session.end_command_line_session()
    except Exception as error:
        _say(f"error: could not write the profile: {error}")
        return code or 1
    if opened is not None:
        _say(f"wrote {opened.output_path}")
    return code


def _say(message):
    sys.stdout.flush()  # keep the target's output ahead of ours when both go to a terminal
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


def _list_metrics(options):
    """--list-metrics: one metric per line, `name<TAB>type<TAB>unit<TAB>description`."""
    from .backends.counters import list_metrics

    try:
        metrics = list_metrics(chip=options.chip, submetrics=options.submetrics)
    except (RuntimeError, ValueError, BackendUnavailable) as error:
        _say(f"error: {error}")
        return 1
    for m in metrics:
        for name in (m.get("submetrics") if options.submetrics else None) or [m["name"]]:
            print(f"{name}\t{m['type']}\t{m['unit']}\t{m['description']}")
    return 0


def main(argv=None):
    """Entry point of `flagtree-profiler`; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        options, kind, target, args = _parse(argv)
    except _UsageError as error:
        _say(f"error: {error}")
        return 2
    except SystemExit as done:  # -h printed the help
        return done.code or 0
    if _ixkn.requested(options):
        return _ixkn.main(options, kind, target, args, _default_name, _say)
    if kind == "list-metrics":
        return _list_metrics(options)
    set_interpret = _maybe_use_interpreter(options)
    try:
        session_id = _session.begin_command_line_session(
            name=options.name or _default_name(kind, target), context=options.context,
            data=options.data, backend=options.backend, mode=options.mode, hook=options.hook)
    except (ValueError, BackendUnavailable, ImportError) as error:
        _say(f"error: {error}")
        return 2
    opened = _session._sessions.get(session_id)  # names the output in the final message
    if session_id == -1:
        _say("FLAGTREE_PROFILER_DISABLE is set: running without profiling")
    _announce_backend(opened, set_interpret)
    return _finish(opened, _run_profiled(kind, target, args))


if __name__ == "__main__":
    sys.exit(main())
