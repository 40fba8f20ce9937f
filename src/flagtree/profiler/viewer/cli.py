"""Command line of ``flagtree-profiler-viewer``: argument parsing and the pipeline.

``main(argv) -> int`` never lets a traceback escape for bad input: user
errors print one ``flagtree-profiler-viewer: error: ...`` line and return 2.
"""

import argparse
import gc
import math
import os
import re
import sys

from . import ranks as rank_view
from .diff import diff_tree
from .errors import ViewerError
from .metrics import needed_keys, parse_metrics, prepare, usable_specs
from .profile_tree import compute_inclusive, exclude, include, load_profiles, release
from .render import FRAME_FORMATS, View, render_metric_list, render_sorted, render_tree, use_color

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
  util                             max(flop/s / peak flop/s, byte/s / peak bandwidth)

examples:
  flagtree-profiler-viewer run.hatchet
  flagtree-profiler-viewer -m time/ms,count,tflop16/s run.hatchet
  flagtree-profiler-viewer -m time/% -d 3 -t 0.01 run.hatchet
  flagtree-profiler-viewer -i 'matmul' -e 'warmup' run.hatchet
  flagtree-profiler-viewer --print-sorted -m avg_time/us run.hatchet
  flagtree-profiler-viewer -f function:line run.hatchet
  flagtree-profiler-viewer -l run.hatchet
  flagtree-profiler-viewer -m time/ms --diff-profile before.hatchet after.hatchet
  flagtree-profiler-viewer -m time/ms,cycles timing.hatchet cycles.hatchet
  flagtree-profiler-viewer -m time/ms,time/ms:max,time/ms:imbalance run.rank*.hatchet
  flagtree-profiler-viewer --print-sorted -m time/ms:imbalance,time/ms:mean profiles/
  flagtree-profiler-viewer --merge-traces merged.json run.rank*.chrome_trace

Several profiles merge into one tree by node path (same path: metrics summed; profiles of
concurrent sessions of one process, e.g. nvidia + instrumentation, count a shared metric once).
Rank files (<name>.rank<r>.hatchet) or a folder merge across ranks: plain metrics are the sum,
and a suffix gives a statistic over ranks: <m>:max, :min, :mean, :imbalance ((max-mean)/mean),
:slowest (the rank of the max; added after :max and :imbalance). Losses are listed per rank.
Colour is used only on a terminal; NO_COLOR or --no-color turns it off.
"""


def build_parser():
    parser = argparse.ArgumentParser(
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
    add("--print-sorted", action="store_true",
        help="print leaves and kernels flat, sorted by the first metric, with their paths")
    add("-l", "--list", action="store_true", help="list the metrics the profile has and exit")
    add("-f", "--format", choices=FRAME_FORMATS, default="full",
        help="how to print python frames '<file>:<line>@<function>' (default: full)")
    add("--diff-profile", metavar="OTHER", help="show this profile minus OTHER, node by node")
    add("--no-color", action="store_true", help="never colour the output")
    add("--merge-traces", metavar="OUT", help="merge the given Chrome traces (ranks) into one timeline OUT")
    return parser


def _parse_depth(text):
    if text is None:
        return None
    try:
        depth = int(text)
    except ValueError:
        raise ViewerError(f"invalid --depth '{text}': expected a whole number >= 0") from None
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
    except re.error as exc:
        raise ViewerError(f"invalid {option} regex '{pattern}': {exc}") from None


def _value_lookup(metrics, root):
    root_incl = root.incl

    def values_of(node):
        values = node.values
        if values is None:
            values = node.values = [m.compute(node.incl, root_incl) for m in metrics]
        return values

    return values_of


def _prepare(profile, spec, include_rx, exclude_rx):
    """Filter and sum one profile; returns its value lookup function."""
    root = profile.root
    metrics = parse_metrics(spec, profile.names, profile.device_info, profile.label)
    if exclude_rx is not None:
        exclude(root, exclude_rx)
    if include_rx is not None:
        include(root, include_rx)
    prepare(metrics, root, profile.device_info)
    compute_inclusive(root, needed_keys(metrics))
    return metrics, _value_lookup(metrics, root)


def _list_metrics(profile):
    names = profile.names
    return render_metric_list(profile, names, usable_specs(names, profile.device_info))


def run(args, stream):
    """The viewer pipeline for parsed arguments; returns the text to print."""
    if args.merge_traces is not None:
        return rank_view.merge_traces_command(args)
    if rank_view.handles(args):  # rank files, a folder, or :max/:imbalance... metrics
        return rank_view.run(args, stream)
    depth = _parse_depth(args.depth)
    threshold = _parse_threshold(args.threshold)
    include_rx = _compile("--include", args.include)
    exclude_rx = _compile("--exclude", args.exclude)
    profile = load_profiles(args.profiles)
    if args.list:
        return _list_metrics(profile)
    metrics, values_of = _prepare(profile, args.metrics, include_rx, exclude_rx)
    trees = [profile.root]
    diff = args.diff_profile is not None
    if diff:
        other = load_profiles([args.diff_profile])
        _, other_values = _prepare(other, args.metrics, include_rx, exclude_rx)
        trees += [other.root, diff_tree(profile.root, other.root, values_of, other_values)]
        values_of = _diff_lookup
    view = View(metrics, values_of, depth=depth, threshold=threshold, frame_format=args.format,
                color=use_color(stream, args.no_color), diff=diff)
    try:
        render = render_sorted if args.print_sorted else render_tree
        return render(trees[-1], view)
    finally:
        for tree in trees:
            release(tree)


def _diff_lookup(node):
    return node.values


def _write(stream, text):
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        # The reader (e.g. `head`) left; silence the flush at interpreter exit.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass


def main(argv=None) -> int:
    """Console entry point; returns the process exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    stream = sys.stdout
    # Building 100k+ small objects triggers many useless GC passes.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        text = run(args, stream)
    except ViewerError as exc:
        sys.stderr.write(f"{PROG}: error: {exc}\n")
        return 2
    finally:
        if gc_was_enabled:
            gc.enable()
    _write(stream, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
