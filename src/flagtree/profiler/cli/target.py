"""How flagtree-profiler runs its target (a script, a module or pytest) inside the session, as
`python script.py`, `python -m module` or `pytest` would, and the exit status it ends with."""
import builtins
import os
import runpy
import sys
import types
import zipfile

from . import pytest_scopes

_HERE = os.path.dirname(os.path.abspath(__file__))
# The command's own files, above the target in a traceback (python -m flagtree.profiler[.cli]).
_LAUNCHER_FILES = (os.path.abspath(__file__), os.path.join(_HERE, "command.py"), os.path.join(_HERE, "__main__.py"),
                   os.path.join(os.path.dirname(_HERE), "__main__.py"), runpy.__file__)


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
    return zipfile.is_zipfile(path)


def _run_module(name, args):
    sys.argv = [name, *args]  # runpy puts the module's file in argv[0], as python -m does
    sys.path[0] = os.getcwd()
    runpy.run_module(name, run_name="__main__", alter_sys=True)


# Where pytest's own frames live: left out of the python context above each test.
PYTEST_FRAME_FILES = ["/_pytest/", "/pluggy/", "/pytest/__init__.py", "/pytest/__main__.py"]


def _run_pytest(args):
    import pytest  # deferred: only pytest targets need it

    sys.argv = ["pytest", *args]
    code = pytest.main(list(args), plugins=[pytest_scopes.plugin()])  # a scope per test
    if code:
        raise SystemExit(int(code))


def _run_target(kind, target, args):
    if kind == "script":
        _run_script(target, args)
    elif kind == "module":
        _run_module(target, args)
    else:
        _run_pytest(args)


def exit_code(error):
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
    return filename in _LAUNCHER_FILES or filename.startswith("<frozen runpy")


def run_profiled(kind, target, args):
    """Runs the target (SIGTERM already turned into SystemExit); returns its exit status."""
    saved = (list(sys.argv), list(sys.path), sys.modules.get("__main__"))
    try:
        _run_target(kind, target, args)
        return 0
    except BaseException as error:  # noqa: B902 - every way out must still write the profile
        return exit_code(error)
    finally:
        # The metadata written next records the command's own argv, not the script's.
        sys.argv, sys.path[:] = saved[0], saved[1]
        if saved[2] is not None:
            sys.modules["__main__"] = saved[2]
