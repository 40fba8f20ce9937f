"""Command line of ``flagtree-profiler-viewer``: argument parsing and the pipeline.

``main(argv) -> int`` never lets a traceback escape: bad input prints one
``flagtree-profiler-viewer: error: ...`` line (control characters escaped) and returns 2;
output that cannot be written (``/dev/full``, a closed stdout) is reported the same way, and
a reader that leaves early (``| head``) ends the run quietly with 0.

Options live in one table, :func:`build_parser`; the pipeline is :func:`run`, which loads
the tree with :func:`flagtree.profiler.viewer.profile_tree.load_profiles` and writes through
a ``write(text)`` callable, so another view can reuse both.
"""

import argparse
import gc
import os
import sys

from . import exports
from .diff import diff_tree
from .errors import ViewerError
from .graph_view import DEFAULT_GRAPH_VIEW, GRAPH_VIEWS
from .metrics import usable_specs
from .nodes import stored_values
from .options import DEFAULT_METRICS, default_metrics, parse_depth, parse_threshold, selection
from .pipeline import summed
from .profile_tree import release
from .render import FRAME_FORMATS, View, render_metric_list, render_sorted, render_tree, use_color
from ..common.safe_text import safe
from .. import progress
from ..stop_signals import Stopped, ignore_stop_signals, stop_signals_unwind, stopped_status

PROG = "flagtree-profiler-viewer"

EPILOG = """\
metrics (-m, comma-separated):
  time                             inclusive device time, each value in its unit (default)
  time/s time/ms time/us time/ns   the same in one unit
  time/%                           share of the root's inclusive time
  avg_time[/s|ms|us|ns]            time per call (time / count)
  cpu_time[/s|ms|us|ns]            inclusive CPU time
  count, bytes, cycles, <name>     any stored metric by its own name
  flop8/s .. flop64/s, flop/s      achieved FLOP rate (prefix g or t: gflop16/s, tflop/s)
  byte/s gbyte/s tbyte/s           achieved memory throughput
  util                             max(flop/s / peak flop/s, byte/s / peak bandwidth),
                                   on kernels only ('-' on scopes and ROOT, as in Proton)

Every value is inclusive: a node's own metrics plus its subtree's. ROOT's own (exclusive)
metrics are the records attributed to no scope; its row is the whole profile's total.

examples:
  flagtree-profiler-viewer run.hatchet
  flagtree-profiler-viewer -m time/ms,count,tflop16/s run.hatchet
  flagtree-profiler-viewer -m time/% -d 3 -t 0.01 run.hatchet
  flagtree-profiler-viewer -i 'matmul' -e 'warmup' run.hatchet
  flagtree-profiler-viewer --print-sorted -m avg_time/us run.hatchet
  flagtree-profiler-viewer -f function_line run.hatchet
  flagtree-profiler-viewer -l run.hatchet
  flagtree-profiler-viewer --graph-view captured run.hatchet   # CUDA-graph replays at their capture
  flagtree-profiler-viewer -m time/ms --diff-profile before.hatchet after.hatchet
  flagtree-profiler-viewer -m time/ms,cycles timing.hatchet cycles.hatchet
  flagtree-profiler-viewer -m time/ms,time/ms:max,time/ms:imbalance run.rank*.hatchet
  flagtree-profiler-viewer --print-sorted -m time/ms:imbalance,time/ms:mean profiles/
  flagtree-profiler-viewer --merge-traces merged.json run.rank*.chrome_trace
  flagtree-profiler-viewer run.hatchet      # only run.part1.hatchet, run.part2.hatchet...: all parts

Several profiles merge into one tree by node path (same path: metrics summed; profiles of
concurrent sessions of one process, e.g. nvidia + instrumentation, count a shared metric once).
The scopes launch_metadata hooks ran in (__launch_metadata, __proton_launch_metadata) are
hidden with their subtrees unless --show-metadata is given.
Rank files (<name>.rank<r>.hatchet) or a folder merge across ranks: plain metrics are the sum,
and a suffix gives a statistic over ranks: <m>:max, :min, :mean, :imbalance ((max-mean)/mean),
:slowest (the rank of the max; added after :max and :imbalance). Losses are listed per rank.
Colour is used only on a terminal; NO_COLOR or --no-color turns it off.
"""


class _Parser(argparse.ArgumentParser):
    """argparse whose error line has the user's text escaped, like every other error."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {safe(message)}\n")

    def _print_message(self, message, file=None):
        try:
            super()._print_message(message, file)
        except (OSError, ValueError):
            pass  # help or usage to a closed or full stream: nothing more to say


def build_parser():
    """The option table: one ``add(...)`` line per option.

    Another view adds its options here (e.g. ``--speedscope FILE``) and, in :func:`run`, a
    branch after ``load_profiles`` that writes its format instead of the tree; it gets the
    merged :class:`~flagtree.profiler.viewer.profile_tree.Profile` and ``write``.
    """
    parser = _Parser(
        prog=PROG,
        description="Print a FlagTree Profiler (or Proton) tree profile as an annotated tree.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add("profiles", nargs="+", metavar="profile.hatchet", help="profile file(s); several are merged")
    add("-m", "--metrics", default=DEFAULT_METRICS, help="comma-separated metrics, with units (time/ms) or "
        "without (time: each value in the unit it reads best in, ns/us/ms/s); default: time")
    add("--sci", action="store_true", help="e-notation for values under 0.1 or from 1e6 on (default: plain decimals)")
    add("-i", "--include", metavar="REGEX", help="keep only paths through nodes whose name matches")
    add("-e", "--exclude", metavar="REGEX", help="drop nodes whose name matches, with their subtrees")
    add("-d", "--depth", metavar="N", help="print down to depth N (the root is depth 0)")
    add("-t", "--threshold", metavar="F",
        help="hide nodes whose first metric is below F times the root's (0 <= F <= 1)")
    add("--print-sorted", "--print_sorted", action="store_true",
        help="print leaves and kernels flat, sorted by the first metric, with their paths")
    add("-l", "--list", action="store_true", help="list the metrics the profile has and exit")
    add("-f", "--format", choices=FRAME_FORMATS, default="full", metavar="STYLE",
        help="how to print python frames '<file>:<line>@<function>': full, Proton's "
             "file_function_line (file:line@function), function_line (line@function), "
             "file_function (file@function), or file:function:line, function:line, "
             "file:function (default: full)")
    # -diff: Proton's spelling; declared, so that argparse reads it whole rather than as -d iff.
    add("--diff-profile", "-diff", metavar="OTHER", help="show this profile minus OTHER, node by node")
    add("--show-metadata", "--launch-metadata", dest="show_metadata", action="store_true",
        help="keep the __launch_metadata / __proton_launch_metadata nodes: the kernels launch_metadata "
             "functions launched themselves (hidden by default)")
    add("--graph-view", choices=GRAPH_VIEWS, default=DEFAULT_GRAPH_VIEW, metavar="VIEW",
        help="CUDA-graph replays: nested (as written: replay context -> <captured_at> -> capture path), "
             "captured (under the capture path only) or replayed (kernels directly under the replay "
             "context) (default: nested)")
    add("--fused", action="store_true", help="after each inductor kernel, what it fuses: ATen operators, "
        "FX nodes and, where known, the model's source lines")
    add("--no-color", action="store_true", help="never colour the output")
    exports.add_options(add)
    add("--merge-traces", metavar="OUT", help="merge the given Chrome traces (ranks) into one timeline OUT")
    return parser


def _may_want_ranks(args):
    """A cheap first look (ranks.handles gives the answer): a folder, a `.rank` file name, or a
    metric suffix such as `:max` could ask for the cross-rank view. The rank view's modules
    (the fold, the package's rank detection) are imported only then: a plain view's start-up
    does not pay for them."""
    return ":" in args.metrics or any(".rank" in os.path.basename(p) or os.path.isdir(p) for p in args.profiles)


def _list_metrics(profile, write):
    names = profile.names
    render_metric_list(profile, names, usable_specs(names, profile.device_info), write)


def run(args, write, stream=None, release_trees=True):
    """The viewer pipeline for parsed arguments, writing through ``write(text)``.

    ``stream`` (the output file object) only decides colour. ``release_trees=False`` leaves
    the trees for the caller (or the process exit) to free.
    """
    if args.merge_traces is not None:
        from . import ranks  # deferred: numpy and the rank merge, see _may_want_ranks

        return ranks.merge_traces_command(args, write)
    chosen = selection(args)
    if exports.requested(args):  # exports group rank files themselves (a profile per rank)
        write(exports.export_all(args, chosen))
        return
    if _may_want_ranks(args):
        from . import ranks  # deferred: numpy and the rank merge, see _may_want_ranks

        if ranks.handles(args):  # rank files, a folder, or :max/:imbalance... metrics
            return ranks.run(args, write, stream, release_trees)
    depth = parse_depth(args.depth)
    threshold = parse_threshold(args.threshold)
    profile = exports.load(args.profiles)
    if args.list:
        return _list_metrics(profile, write)
    args.metrics = default_metrics(args.metrics, profile.names)
    metrics, values_of = summed(profile, args.metrics, chosen)
    trees = [profile.root]
    diff = args.diff_profile is not None
    if diff:
        other = exports.load([args.diff_profile])
        _, other_values = summed(other, args.metrics, chosen)
        trees += [other.root, diff_tree(profile.root, other.root, values_of, other_values)]
        values_of = stored_values  # diff_tree stores each difference node's values
    view = View(metrics, values_of, depth=depth, threshold=threshold, frame_format=args.format,
                color=use_color(stream, args.no_color), diff=diff, scientific=args.sci)
    view.fused = profile.fused if args.fused else None
    try:
        render = render_sorted if args.print_sorted else render_tree
        render(trees[-1], view, write)
    finally:
        for tree in trees if release_trees else ():
            release(tree)


class _OutputGone(Exception):
    """The reader of stdout left (EPIPE): stop quietly."""


class _OutputFailed(Exception):
    """stdout cannot take the output (ENOSPC, EBADF...)."""


def _writer(stream):
    if stream is None:
        raise ViewerError("cannot write output: stdout is closed")

    def write(text):
        try:
            stream.write(text)
        except BrokenPipeError:
            raise _OutputGone() from None
        except (OSError, ValueError) as exc:
            raise _OutputFailed(exc) from None

    return write


def _flush(stream):
    try:
        stream.flush()
    except BrokenPipeError:
        raise _OutputGone() from None
    except (OSError, ValueError) as exc:
        raise _OutputFailed(exc) from None


def _silence(stream):
    """Point stdout's descriptor at /dev/null so the flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _report(message):
    try:
        sys.stderr.write(f"{PROG}: error: {safe(message)}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # no stderr either: the exit status is all that is left


def main(argv=None, release_trees=True) -> int:
    """Run the viewer on ``argv`` (default: sys.argv[1:]); returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    stream = sys.stdout
    # Building 100k+ small objects triggers many useless GC passes.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        # progress: lines on a terminal's stderr past a few seconds
        with stop_signals_unwind(), progress.running(PROG):
            run(args, _writer(stream), stream, release_trees)
            _flush(stream)
    except (KeyboardInterrupt, Stopped) as stop:
        ignore_stop_signals()
        status, what = stopped_status(stop)
        _report(f"stopped by {what}: a file being written was not written (an earlier one stays as it was)")
        return status
    except ViewerError as exc:
        _report(str(exc))
        return 2
    except _OutputGone:
        _silence(stream)
        return 0
    except _OutputFailed as exc:
        _silence(stream)
        cause = exc.args[0]
        _report(f"cannot write output: {getattr(cause, 'strerror', None) or cause}")
        return 2
    except MemoryError:  # reading is said where it happens (exports.load); this is the rest
        _report("out of memory summing or printing the profile")
        return 2
    finally:
        if gc_was_enabled:
            gc.enable()
    return 0


def console_main():
    """The installed command: main(), then exit without freeing the tree node by node.

    A 1,000,000-node tree takes Python a good part of a second to tear down; the
    operating system reclaims it at once.
    """
    status = main(release_trees=False)
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


if __name__ == "__main__":
    console_main()
