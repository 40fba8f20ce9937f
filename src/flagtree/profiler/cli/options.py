"""The command line of `flagtree-profiler`: its options (and those of the backends' extensions,
cli/extension.py), where they end and the target begins, and the target's kind and name."""
import argparse
import importlib.util
import os
import sys

from .. import session as _session
from ..backends import registrations
from .data_option import data_kinds
from .window_options import add_window_options, check_window_options
from .output import PROG

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
  flagtree-profiler --schedule wait=5,active=2,repeat=3 train.py   # parts of chosen steps (step())
  flagtree-profiler --trigger signal --window seconds=5 serve.py  # idle until kill -USR1 <pid>
  flagtree-profiler --trigger file:/tmp/go --window steps=3 train.py   # touch /tmp/go: 3 steps

The profile is written when the target ends, also after sys.exit, an uncaught exception,
Ctrl-C or SIGTERM; the command exits with the target's code (1 on an exception, 130 on
Ctrl-C, 143 on SIGTERM). The script's own flagtree.profiler.start()/finalize() calls defer
to the command's session. With -b interpreter, or without a GPU driver and without --backend,
the command sets TRITON_INTERPRET=1 (unless it is set) so Triton's interpreter runs the kernels
on the CPU, profiled with host-measured times. Under pytest each test's kernels go under a scope
named by its node id; with -c python, pytest's frames are left out (--keep-pytest-frames keeps them).
View a profile with: flagtree-profiler-viewer NAME.hatchet
"""

# The command's own options that take a value: the split between its options and the target's
# needs them (each extension adds its own).
VALUE_OPTIONS = frozenset({"-n", "--name", "-b", "--backend", "-c", "--context", "-d", "--data", "-m", "--mode",
                           "-k", "--hook", "--schedule", "--trigger", "--window"})


class UsageError(Exception):
    """A bad command line: reported as one `flagtree-profiler: error:` line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # argparse would print the whole usage first; one line reads better in scripts and logs.
        raise UsageError(f"{message} (see {PROG} -h)")


def parser(extensions):
    """The argparse parser of the command's options, with each extension's."""
    result = _Parser(
        prog=PROG, allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter,
        usage=f"{PROG} [options] (script.py | --module MODULE | pytest) [args...]",
        description="Profile the Triton kernels of a Python script, module or pytest run.",
        epilog=EPILOG)
    result.add_argument("-n", "--name", help="output path without extension (default: the script's "
                        "name without .py, the module's last part, or 'pytest')")
    result.add_argument("-b", "--backend", help=f"profiling backend (default: chosen from Triton's "
                        f"target): {', '.join(registrations())}")
    result.add_argument("-c", "--context", default="shadow", choices=_session.CONTEXTS,
                        help="how kernels are attributed: shadow = scopes and states (default), "
                             "python = the Python call stack")
    result.add_argument("-d", "--data", default="tree", type=data_kinds,
                        help="tree = NAME.hatchet call tree (default), trace = NAME.chrome_trace timeline, perfetto "
                             "= NAME.pftrace (Perfetto protobuf); several joined by commas (tree,trace): one run")
    result.add_argument("-m", "--mode", help="backend-specific collection mode (default: none)")
    result.add_argument("-k", "--hook", choices=_session.HOOKS,
                        help="triton = also record launch metadata through Triton's launch hook")
    result.add_argument("--module", metavar="MODULE",
                        help="run MODULE as with python -m MODULE; the arguments after it go to it")
    result.add_argument("--keep-pytest-frames", action="store_true",
                        help="with pytest and -c python: keep pytest's and pluggy's frames above each test")
    add_window_options(result)
    for extension in extensions:
        extension.add_options(result)
    return result


def split(argv, value_options):
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
        i += 2 if word in value_options else 1
    return argv, []


def parse(argv, extensions):
    """(options, kind, target, target args) with kind one of 'script', 'module', 'pytest', or None
    for an extension that runs without a target (`extensions`: extension.extensions())."""
    own, rest = split(argv, VALUE_OPTIONS.union(*(e.VALUE_OPTIONS for e in extensions)))
    options = parser(extensions).parse_args(own)
    try:
        check_window_options(options)
    except ValueError as error:
        raise UsageError(f"{error} (see {PROG} -h)") from None
    if any(e.requested(options) and not e.NEEDS_TARGET for e in extensions):
        return options, None, None, rest
    if options.module is not None:
        _check_module(options.module)
        return options, "module", options.module, rest
    if not rest:
        raise UsageError(f"no script to run; usage: {PROG} [options] script.py [args...] (see {PROG} -h)")
    target, args = rest[0], rest[1:]
    if target == "pytest":
        return options, "pytest", target, args
    if not os.path.exists(target):
        raise UsageError(f"can't open file {target!r}: no such file")
    if os.path.isdir(target) and not os.path.isfile(os.path.join(target, "__main__.py")):
        raise UsageError(f"can't find '__main__' module in {target!r} (a folder runs its __main__.py)")
    return options, "script", target, args


def _check_module(name):
    """A usage error unless `python -m name` would find something to run: checked before the
    session starts, so a misspelt module writes nothing. Parent packages are imported, as
    python -m imports them."""
    saved, sys.path[0] = sys.path[0], os.getcwd()  # where _run_module looks, as python -m does
    try:
        spec = _find_spec(name)
        if spec is None:
            raise UsageError(f"no module named {name!r}")
        if spec.submodule_search_locations is not None and _find_spec(name + ".__main__") is None:
            raise UsageError(f"{name!r} is a package without a __main__ module; it cannot be run")
    finally:
        sys.path[0] = saved


def _find_spec(name):
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a parent package missing, or a relative/empty name
        return None
    except Exception as error:  # a parent package that fails to import
        raise UsageError(f"error while finding module {name!r}: {type(error).__name__}: {error}") from None


def default_name(kind, target):
    if kind == "pytest":
        return "pytest"
    if kind == "module":
        return target.rsplit(".", 1)[-1]
    base = os.path.basename(os.path.normpath(target))
    return base[:-3] if base.endswith(".py") else base
