"""The `flagtree-profiler` command: runs a Python script, a module or pytest under one profiling
session and writes the profile when the target ends, however it ends (normal end, sys.exit,
exception, Ctrl-C, SIGTERM).

    flagtree-profiler [options] script.py [script args...]
    flagtree-profiler [options] --module package.module [module args...]
    flagtree-profiler [options] pytest [pytest args...]
    python -m flagtree.profiler [options] ...      (or python -m flagtree.profiler.cli)

Options before the target belong to the profiler; everything after it reaches the target as is.
"""
import argparse
import ctypes
import importlib.util
import os
import signal
import sys

from . import ixkn_mode as _ixkn, target as target_runner
from .. import _env, session as _session
from .data_option import data_kinds, run_files
from ..backends import KNOWN_BACKENDS, BackendUnavailable, implemented_backends
from ..native_core import native
from ..paths import part_stem
from .interrupted_write import WriteInterrupted, abandon_the_write, identities, interrupted_line
from ..backends.nvidia.counters import list_metrics
from ..distributed.ranks import current as current_rank
from ..common.safe_text import safe

PROG = "flagtree-profiler"

EPILOG = """\
examples:
  flagtree-profiler examples/vector_add.py              # writes vector_add.hatchet
  flagtree-profiler -n runs/add -d tree,trace train.py   # runs/add.hatchet, .chrome_trace
  flagtree-profiler -c python model.py                  # kernels under <file>:<line>@<function>
  flagtree-profiler -b interpreter -k triton bench.py   # launch metadata via Triton's hook
  flagtree-profiler -n tests pytest -x tests/kernels    # profile a test run
  flagtree-profiler --module mypkg.bench --size 64      # like python -m mypkg.bench
  flagtree-profiler -m metrics=dram__bytes_read.sum,dram__bytes_write.sum app.py   # hardware counters
  flagtree-profiler --list-metrics [--chip GH100] [--submetrics]   # the metric names a GPU offers

The profile is written when the target ends, also after sys.exit, an uncaught exception,
Ctrl-C or SIGTERM; the command exits with the target's code (1 on an exception, 130 on
Ctrl-C, 143 on SIGTERM). The script's own flagtree.profiler.start()/finalize() calls defer
to the command's session. With -b interpreter, or without a GPU driver and without --backend,
the command sets TRITON_INTERPRET=1 (unless it is set) so Triton's interpreter runs the kernels
on the CPU, profiled with host-measured times. Under pytest each test's kernels go under a scope
named by its node id; with -c python, pytest's frames are left out (--keep-pytest-frames keeps them).
View a profile with: flagtree-profiler-viewer NAME.hatchet
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
                        f"target): {_backends_text()}")
    parser.add_argument("-c", "--context", default="shadow", choices=_session.CONTEXTS,
                        help="how kernels are attributed: shadow = scopes and states (default), "
                             "python = the Python call stack")
    parser.add_argument("-d", "--data", default="tree", type=data_kinds,
                        help="tree = NAME.hatchet call tree (default), trace = NAME.chrome_trace timeline, perfetto "
                             "= NAME.pftrace (Perfetto protobuf); several joined by commas (tree,trace): one run")
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
    parser.add_argument("--keep-pytest-frames", action="store_true",
                        help="with pytest and -c python: keep pytest's and pluggy's frames above each test")
    return parser


def _backends_text():
    """Each backend once: the implemented ones, then those the spec names that this version lacks."""
    implemented = implemented_backends()
    missing = [name for name in KNOWN_BACKENDS if name not in implemented]
    return ", ".join(implemented) + (f" (not implemented here: {', '.join(missing)})" if missing else "")


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
        _check_module(options.module)
        return options, "module", options.module, rest
    if not rest:
        raise _UsageError(f"no script to run; usage: {PROG} [options] script.py [args...] (see {PROG} -h)")
    target, args = rest[0], rest[1:]
    if target == "pytest":
        return options, "pytest", target, args
    if not os.path.exists(target):
        raise _UsageError(f"can't open file {target!r}: no such file")
    if os.path.isdir(target) and not os.path.isfile(os.path.join(target, "__main__.py")):
        raise _UsageError(f"can't find '__main__' module in {target!r} (a folder runs its __main__.py)")
    return options, "script", target, args


def _check_module(name):
    """A usage error unless `python -m name` would find something to run: checked before the
    session starts, so a misspelt module writes nothing. Parent packages are imported, as
    python -m imports them."""
    saved, sys.path[0] = sys.path[0], os.getcwd()  # where _run_module looks, as python -m does
    try:
        spec = _find_spec(name)
        if spec is None:
            raise _UsageError(f"no module named {name!r}")
        if spec.submodule_search_locations is not None and _find_spec(name + ".__main__") is None:
            raise _UsageError(f"{name!r} is a package without a __main__ module; it cannot be run")
    finally:
        sys.path[0] = saved


def _find_spec(name):
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent package missing, or a relative/empty name
        return None
    except Exception as error:  # a parent package that fails to import
        raise _UsageError(f"error while finding module {name!r}: {type(error).__name__}: {error}") from None


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
    """Sets TRITON_INTERPRET=1 (before the target imports triton) when the interpreter backend is
    chosen (-b or FLAGTREE_PROFILER_BACKEND), or when no backend is chosen and no GPU can run
    kernels; a TRITON_INTERPRET the user set is left alone. Returns why it set it, or None."""
    if "TRITON_INTERPRET" in os.environ:
        return None
    chosen = options.backend or _env.backend()
    if chosen == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"
        return "chosen"
    if chosen or _gpu_driver_present():
        return None
    os.environ["TRITON_INTERPRET"] = "1"
    return "no GPU"


def _announce_backend(opened, set_interpret):
    if opened is None or opened.backend.name != "interpreter":
        return
    if set_interpret == "no GPU":
        _say("no GPU driver found, so TRITON_INTERPRET=1 was set for the script: Triton's interpreter runs "
             "its kernels on the CPU, with host-measured kernel times")
    elif set_interpret == "chosen":
        _say("backend interpreter: TRITON_INTERPRET=1 was set for the script; kernel times are host-measured")
    else:
        _say("profiling Triton's interpreter (TRITON_INTERPRET=1); kernel times are host-measured")


def _on_sigterm(signum, frame):
    # Unwinds the target like sys.exit, so the finally-block still writes the profile.
    raise SystemExit(128 + signum)


def _install_sigterm():
    try:
        return signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # main() called outside the main thread: signals can't be handled here
        return None


def _finish(opened, code):
    """Writes the profile and says where; a failed write turns a clean exit into status 1. A
    signal during the write abandons what is left of it (a native writer runs to its end first:
    its file is whole or absent), and one line says what was and was not written."""
    try:
        previous = {n: signal.signal(n, abandon_the_write) for n in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # main() called outside the main thread: signals can't be handled here
        previous = {}
    before = identities(opened)
    try:
        return _write(opened, code)
    except WriteInterrupted as stop:
        _session.discard_command_session()  # what was not written is not written at exit either
        _say(interrupted_line(opened, stop.signum, before))
        return 128 + stop.signum
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _write(opened, code):
    try:
        _session.finalize_command_session()
    except Exception as error:
        _say(f"error: could not write the profile: {error}")
        return code or 1
    for files in run_files(opened) if opened is not None else ():
        _say(_wrote_line(files))
    return code


def _wrote_line(files):
    """What finalize wrote: the profile, or its parts (written instead of it, see flush_part)."""
    if len(files) == 1:
        return f"wrote {files[0]}"
    stem = part_stem(files[0])
    extension = files[0][files[0].rindex("."):]
    return (f"wrote {len(files)} parts, {files[0]} to {files[-1]}; view them merged: "
            f"flagtree-profiler-viewer {stem}*{extension}")


def _message(error):
    """The error's text without the package's own prefix: the command adds its own."""
    text = str(error)
    while text.startswith("flagtree.profiler: "):
        text = text[len("flagtree.profiler: "):]
    return text


def _say(message):
    """One line on stderr; what it names (the profile's name, a path, an error's text) may hold
    anything, so control characters are escaped (a terminal must not act on them)."""
    sys.stdout.flush()  # keep the target's output ahead of ours when both go to a terminal
    print(f"{PROG}: {safe(message)}", file=sys.stderr, flush=True)


def _list_metrics(options):
    """--list-metrics: one metric per line, `name<TAB>type<TAB>unit<TAB>description`."""
    try:
        metrics = list_metrics(chip=options.chip, submetrics=options.submetrics)
    except (RuntimeError, ValueError, BackendUnavailable) as error:
        _say(f"error: {_message(error)}{_list_metrics_hint(options)}")
        return 2
    for m in metrics:
        for name in (m.get("submetrics") if options.submetrics else None) or [m["name"]]:
            print("\t".join(safe(str(v)) for v in (name, m["type"], m["unit"], m["description"])))
    return 0


def _list_metrics_hint(options):
    if native.nvidia.cuda_driver_version():
        return ""
    return ("; listing metrics needs the CUDA driver (libcuda.so.1), which this machine lacks: CUPTI's "
            "metric tables cannot be read offline here" + (", even for a named chip" if options.chip else ""))


def main(argv=None):
    """Entry point of `flagtree-profiler`; returns the exit status."""
    argv_given = argv
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
    if argv_given is None and (options.backend or _env.backend()) == "cann":
        from ..backends.vendor.cann import restart_with_preload  # deferred: -b cann only

        restart_with_preload()  # MSPTI's callbacks need libmspti.so in LD_PRELOAD from the start
    if kind == "list-metrics":
        return _list_metrics(options)
    set_interpret = _maybe_use_interpreter(options)
    # From here on SIGTERM unwinds like sys.exit: before the session exists it ends the command
    # with 143 and nothing written, after it the profile is written.
    previous = _install_sigterm()
    try:
        opened = _begin(options, kind, target)
        if opened is False:
            return 2
        _announce_backend(opened, set_interpret)
        code = target_runner.run_profiled(kind, target, args)
    except (KeyboardInterrupt, SystemExit) as stop:  # a signal while the session was starting
        _session.discard_command_session()
        _say("interrupted before the profiling session started; no profile was written")
        return 130 if isinstance(stop, KeyboardInterrupt) else target_runner.exit_code(stop)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return _finish(opened, code)


def _begin(options, kind, target):
    """Starts the command's session: the Session (None when profiling is disabled), or False
    after saying why it could not start."""
    if kind == "pytest" and options.context == "python" and not options.keep_pytest_frames:
        native.context.python_frames_skip(target_runner.PYTEST_FRAME_FILES)
    try:
        session_id = _session.start_command_session(
            name=options.name or _default_name(kind, target), context=options.context,
            data=options.data, backend=options.backend, mode=options.mode, hook=options.hook)
    except (ValueError, BackendUnavailable, ImportError) as error:
        _say(f"error: {_message(error)}")
        return False
    if session_id == -1:
        _say(_disabled_reason())
    return _session.find_session(session_id)  # names the output in the final message


def _disabled_reason():
    if _env.disable_flag():
        return "FLAGTREE_PROFILER_DISABLE is set: running without profiling"
    info = current_rank()
    rank = info.rank if info is not None else 0
    return f"FLAGTREE_PROFILER_RANKS={_env.rank_subset()} leaves rank {rank} out: running without profiling"


if __name__ == "__main__":
    sys.exit(main())
