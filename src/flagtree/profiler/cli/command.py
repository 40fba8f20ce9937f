"""The `flagtree-profiler` command: runs a Python script, a module or pytest under one profiling
session and writes the profile when the target ends, however it ends (normal end, sys.exit,
exception, Ctrl-C, SIGTERM).

    flagtree-profiler [options] script.py [script args...]
    flagtree-profiler [options] --module package.module [module args...]
    flagtree-profiler [options] pytest [pytest args...]
    python -m flagtree.profiler [options] ...      (or python -m flagtree.profiler.cli)

Options before the target belong to the profiler; everything after it reaches the target as is.
Backends extend the command through cli/extension.py; options.py reads the command line,
interpret.py chooses Triton's interpreter without a GPU, finish.py writes the profile.
"""
import signal
import sys

from .. import _env
from . import target as target_runner
from .. import session as _session
from ..backends import BackendUnavailable, command_backend, get_backend
from ..native_core import native
from ..distributed.ranks import current as current_rank
from .extension import Invocation, extensions
from .finish import finish, install_sigterm
from . import trigger as armed_run
from .interpret import announce_backend, maybe_use_interpreter
from .options import UsageError, default_name, parse
from .output import escape, message, say


def main(argv=None):
    """Entry point of `flagtree-profiler`; returns the exit status."""
    argv_given = argv
    argv = sys.argv[1:] if argv is None else list(argv)
    loaded = extensions()
    try:
        options, kind, target, args = parse(argv, loaded)
    except UsageError as error:
        say(f"error: {error}")
        return 2
    except SystemExit as done:  # -h printed the help
        return done.code or 0
    requested = [extension for extension in loaded if extension.requested(options)]
    if len(requested) > 1:
        say(f"error: {requested[0].OPTION} cannot be combined with {requested[1].OPTION}")
        return 2
    if requested:
        name = options.name or (default_name(kind, target) if kind else None)
        return requested[0].main(Invocation(options, kind, target, args, name, say, message, escape))
    chosen = command_backend(options.backend or _env.backend())
    if argv_given is None and chosen is not None:
        get_backend(chosen).before_command()  # e.g. cann restarts with its library in LD_PRELOAD
    if options.trigger is not None:  # armed and idle until the trigger: cli/trigger.py
        return armed_run.run(options, kind, target, args, default_name(kind, target), _disabled_reason)
    return _profile(options, kind, target, args)


def _profile(options, kind, target, args):
    """Runs the target under the command's session and writes the profile."""
    set_interpret = maybe_use_interpreter(options)
    # From here on SIGTERM unwinds like sys.exit: before the session exists it ends the command
    # with 143 and nothing written, after it the profile is written.
    previous = install_sigterm()
    try:
        opened = _begin(options, kind, target)
        if opened is False:
            return 2
        announce_backend(opened, set_interpret)
        code = target_runner.run_profiled(kind, target, args)
    except (KeyboardInterrupt, SystemExit) as stop:  # a signal while the session was starting
        _session.discard_command_session()
        say("interrupted before the profiling session started; no profile was written")
        return 130 if isinstance(stop, KeyboardInterrupt) else target_runner.exit_code(stop)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return finish(opened, code)


def _begin(options, kind, target):
    """Starts the command's session: the Session (None when profiling is disabled), or False
    after saying why it could not start."""
    if kind == "pytest" and options.context == "python" and not options.keep_pytest_frames:
        native.context.python_frames_skip(target_runner.PYTEST_FRAME_FILES)
    try:
        session_id = _session.start_command_session(
            name=options.name or default_name(kind, target), context=options.context,
            data=options.data, backend=options.backend, mode=options.mode, hook=options.hook,
            schedule=options.schedule)
    except (ValueError, BackendUnavailable, ImportError) as error:
        say(f"error: {message(error)}")
        return False
    if session_id == -1:
        say(_disabled_reason())
    return _session.find_session(session_id)  # names the output in the final message


def _disabled_reason():
    if _env.disable_flag():
        return "FLAGTREE_PROFILER_DISABLE is set: running without profiling"
    info = current_rank()
    rank = info.rank if info is not None else 0
    return f"FLAGTREE_PROFILER_RANKS={_env.rank_subset()} leaves rank {rank} out: running without profiling"


if __name__ == "__main__":
    sys.exit(main())
