"""The exports (``--speedscope``, ``--collapsed``, ``--html``): their options and the one loop
that runs them.

Every exporter has one signature, ``export(source, options, out_path)``: ``source`` is an
:class:`ExportSource` (the profiles named on the command line, loaded, filtered and summed on
demand by the viewer's own code, so what an export shows matches what the terminal prints),
``options`` the parsed viewer arguments, ``out_path`` the file to write (atomically). A new
format is a module with such a function and one row in :data:`EXPORTERS`.
"""

import importlib
import os

from .. import progress
from ..paths import parse_output_name
from .errors import ViewerError
from .flame import weight_of
from .options import metric_specs
from .pipeline import summed
from .profile_tree import load_profiles, release
from ..common.safe_text import safe

# (option dest, what the option writes, exporter module, reads ExportSource.weighted_groups):
# the order they run in. The weighed trees are freed before an exporter that does not read them.
# An exporter's module is imported only when its option is given: the terminal view does not
# pay for their imports (the report's page, summary and metadata reading among them).
EXPORTERS = (
    ("speedscope", "a speedscope file (one profile per device, or per rank)", "speedscope", True),
    ("collapsed", "folded stacks 'a;b;kernel 123' for flamegraph.pl", "collapsed", True),
    ("html", "a self-contained HTML report (summary, top kernels, flame view, table, diff)",
     "html_report", False),
)


def exporter(module):
    """The ``export(source, options, out_path)`` function of an exporter module."""
    return importlib.import_module(f".{module}", __package__).export

# `a.rank3.hatchet`, `a.rank3.part1.hatchet`: files of one rank of a multi-process run.


def add_options(add):
    """Register the export options on the viewer's argument parser."""
    for dest, what, _, _ in EXPORTERS:
        add(f"--{dest}", metavar="OUT", help=f"write {what}")
    add("--collapsed-limit", metavar="SIZE",
        help="refuse --collapsed above this size (default 1G; folded stacks grow with depth squared)")


def requested(args):
    return any(getattr(args, dest) for dest, _, _, _ in EXPORTERS)


def load(paths):
    """The viewer's loader; running out of memory here is said as such."""
    progress.step(f"reading {', '.join(safe(str(p)) for p in paths)}")
    try:
        return load_profiles(paths)
    except MemoryError:
        raise ViewerError("out of memory reading the profile") from None


class ExportSource:
    """The profiles an export reads. Loaded trees are kept until :meth:`close`, so exports
    that ask for the same thing (speedscope and collapsed both weigh rank groups) share it."""

    def __init__(self, args, selection):
        self.paths = list(args.profiles)
        self.diff_path = args.diff_profile
        self.selection = selection
        self.metrics = args.metrics
        self._groups = None
        self._loaded = []

    def load(self, paths):
        """A freshly loaded (unfiltered) profile of ``paths``, released at close."""
        profile = load(paths)
        self._loaded.append(profile)
        return profile

    def summed(self, profile, specs):
        """(metrics, values_of) of ``profile`` for ``specs``, filtered by -i/-e, nodes keeping
        their exclusive metrics and sums."""
        return summed(profile, specs, self.selection, keep_own=True)

    def weighted_groups(self):
        """[(rank label or None, Profile, Weight)]: one group per rank when every file names
        its rank, else one, each weighed by the first -m metric."""
        if self._groups is None:
            self._groups = [(label, profile, weight_of(profile, self._first_metric(profile), self.selection))
                            for label, profile in ((label, self.load(paths))
                                                   for label, paths in rank_groups(self.paths))]
        return self._groups

    def _first_metric(self, profile):
        return metric_specs(self.metrics, profile.names)[0]

    def close(self):
        """Frees every tree loaded so far."""
        for profile in self._loaded:
            release(profile.root)  # the viewer runs with the cyclic GC off
        self._loaded = []
        self._groups = None


def rank_groups(paths):
    """[(label, paths)]: one group per rank when every file names its rank, else one group."""
    ranks = [parse_output_name(os.path.basename(p)) for p in paths]
    ranks = [None if name is None else name.rank for name in ranks]
    if not paths or None in ranks:
        return [(None, list(paths))]
    groups = {}
    for path, rank in zip(paths, ranks):
        groups.setdefault(rank, []).append(path)
    return [(f"rank {rank}", groups[rank]) for rank in sorted(groups)]


def export_all(args, selection):
    """Write every requested export; returns the text the command prints."""
    source = ExportSource(args, selection)
    written = []
    try:
        for dest, _, module, weighs in EXPORTERS:
            out_path = getattr(args, dest)
            if out_path:
                if not weighs:
                    source.close()
                try:
                    exporter(module)(source, args, out_path)
                except MemoryError:
                    raise ViewerError(f"out of memory writing --{dest} '{out_path}'") from None
                written.append(out_path)
    finally:
        source.close()
    return "".join(f"wrote {safe(os.fspath(path))}\n" for path in written)
