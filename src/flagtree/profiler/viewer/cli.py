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
import math
import os
import re
import sys
from collections import deque
from itertools import repeat

from .diff import diff_tree
from . import flame
from .errors import ViewerError
from .nodes import stored_values
from .metrics import fill_values, needed_keys, parse_metrics, prepare, usable_specs
from .profile_tree import (compute_inclusive, exclude, hide_metadata, include, load_profiles,
                           release)
from .render import FRAME_FORMATS, View, render_metric_list, render_sorted, render_tree, use_color
from .safe_text import safe

PROG = "flagtree-profiler-viewer"

EPILOG = """\
metrics (-m, comma-separated):
  time/s time/ms time/us time/ns   inclusive GPU time
  time/%                           share of the root's inclusive time
  avg_time/s|ms|us|ns              time per call (time / count)
  cpu_time/s|ms|us|ns              inclusive CPU time
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
    add("-m", "--metrics", default="time/s", help="comma-separated metrics with units (default: time/s)")
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
    add("--diff-profile", metavar="OTHER", help="show this profile minus OTHER, node by node")
    add("--show-metadata", "--launch-metadata", dest="show_metadata", action="store_true",
        help="keep the __launch_metadata / __proton_launch_metadata nodes: the kernels launch_metadata "
             "functions launched themselves (hidden by default)")
    add("--no-color", action="store_true", help="never colour the output")
    flame.add_options(add)
    add("--merge-traces", metavar="OUT", help="merge the given Chrome traces (ranks) into one timeline OUT")
    return parser


def _parse_depth(text):
    if text is None:
        return None
    try:
        depth = int(text)
    except ValueError:
        raise ViewerError(f"invalid --depth '{text}': expected a whole number >= 0") from None
    if depth > 1 << 62:
        depth = 1 << 62  # deeper than any tree: same as no limit
    if depth < 0:
        raise ViewerError(f"invalid --depth '{text}': must not be negative")
    return depth


def _parse_threshold(text):
    if text is None:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise ViewerError(f"invalid --threshold '{text}': expected a number") from None
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ViewerError(f"invalid --threshold '{text}': must be between 0 and 1")
    return value


def _compile(option, pattern):
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except (re.error, OverflowError, RecursionError, ValueError) as exc:
        # OverflowError: a repeat count such as a{99999999999}
        raise ViewerError(f"invalid {option} regex '{pattern}': {exc}") from None


# The value lookup _prepare returns: every node's values are filled when it returns, so
# rendering reads them at C speed. (A node added to the tree afterwards has none.)
node_values = stored_values


def _prepare(profile, args, include_rx, exclude_rx, keep_own=False):
    """Filter and sum one profile; returns its metrics and value lookup function.

    ``keep_own`` leaves each node its exclusive metrics (the flame exports weigh by them) and
    its sums (``incl``); without it only the root keeps its sums. Every node has ``values``."""
    root = profile.root
    _refuse_empty(profile)
    metrics = parse_metrics(args.metrics, profile.names, profile.device_info, profile.label)
    _filter(profile, args, include_rx, exclude_rx)
    prepare(metrics, root, profile.device_info)
    order = compute_inclusive(root, needed_keys(metrics), drop_metrics=not keep_own)
    fill_values(metrics, order, root)
    if not keep_own:
        # Only the values are read from here on (and the root's sums, by a few views): the
        # other nodes' sums go, which keeps a four-column view within 4x the file's size.
        deque(map(setattr, order[1:], repeat("incl"), repeat(None)), maxlen=0)
    return metrics, node_values


def _filter(profile, args, include_rx, exclude_rx):
    """The node filters every view applies: metadata scopes, then -e, then -i."""
    root = profile.root
    if not args.show_metadata and profile.has_metadata:
        hide_metadata(root)
    if exclude_rx is not None:
        exclude(root, exclude_rx)
    if include_rx is not None:
        include(root, include_rx)


def _may_want_ranks(args):
    """A cheap first look (ranks.handles gives the answer): a folder, a `.rank` file name, or a
    metric suffix such as `:max` could ask for the cross-rank view."""
    return ":" in args.metrics or any(".rank" in os.path.basename(p) or os.path.isdir(p) for p in args.profiles)


def _refuse_empty(profile):
    if not profile.root.children and not profile.root.metrics:
        raise ViewerError(f"profile {profile.label} is empty: no kernels or scopes were recorded")


def _list_metrics(profile, write):
    names = profile.names
    render_metric_list(profile, names, usable_specs(names, profile.device_info), write)


def run(args, write, stream=None, release_trees=True):
    """The viewer pipeline for parsed arguments, writing through ``write(text)``.

    ``stream`` (the output file object) only decides colour. ``release_trees=False`` leaves
    the trees for the caller (or the process exit) to free.
    """
    if args.merge_traces is not None:
        from . import ranks as rank_view

        return rank_view.merge_traces_command(args, write)
    include_rx = _compile("--include", args.include)
    exclude_rx = _compile("--exclude", args.exclude)
    if flame.requested(args):  # exports group rank files themselves (a profile per rank)
        prepare = lambda p, a: _prepare(p, a, include_rx, exclude_rx, keep_own=True)
        write(flame.export(args, prepare, load_profiles))
        return
    if _may_want_ranks(args):
        from . import ranks as rank_view  # numpy and the fold, imported only for rank merges

        if rank_view.handles(args):  # rank files, a folder, or :max/:imbalance... metrics
            return rank_view.run(args, write, stream, release_trees)
    depth = _parse_depth(args.depth)
    threshold = _parse_threshold(args.threshold)
    profile = load_profiles(args.profiles)
    if args.list:
        return _list_metrics(profile, write)
    metrics, values_of = _prepare(profile, args, include_rx, exclude_rx)
    trees = [profile.root]
    diff = args.diff_profile is not None
    if diff:
        other = load_profiles([args.diff_profile])
        _, other_values = _prepare(other, args, include_rx, exclude_rx)
        trees += [other.root, diff_tree(profile.root, other.root, values_of, other_values)]
        values_of = node_values  # diff_tree stores each difference node's values
    view = View(metrics, values_of, depth=depth, threshold=threshold, frame_format=args.format,
                color=use_color(stream, args.no_color), diff=diff)
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
        run(args, _writer(stream), stream, release_trees)
        _flush(stream)
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
    except MemoryError:
        _report("out of memory reading the profile")
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
