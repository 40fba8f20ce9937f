"""Proton's viewer functions (``triton.profiler.viewer``) with its signatures and return shapes:
``parse``, ``read``, ``get_raw_metrics``, ``derive_metrics``, ``format_frames``, ``filter_frames``.
Scripts that post-process Proton profiles with them run on ours (and on Proton's files).

The numbers are our viewer's: each GraphFrame is ``flagtree.profiler.read(...).to_graphframe()``
(our reader, merging, metric code and filters), and the columns carry Proton's names
(``time/ms (inc)``, ``util``, ``count (inc)``). A GraphFrame made here remembers the file it was
read from, the metrics derived on it and its frame format, so that ``derive_metrics`` and
``filter_frames`` read the file again with our filters rather than recompute on the frame; one
filtered by hatchet itself (``gf.filter``) has lost that, and they say so. See
docs/reference/viewer.md, "Proton's Python API"."""
import os
import tempfile
import weakref

from ..analysis.profile import read as read_profile
from .errors import ViewerError
from .render import FRAME_FORMATS, format_frame

_SOURCE = "flagtree_source"  # the attribute a GraphFrame made here carries: _Source


class _Source:
    """What a GraphFrame was made from: the file, the metrics derived on it (Proton's column
    name -> our spec), its frame format."""

    def __init__(self, path):
        self.path = path
        self.derived = {}
        self.format = None


def _path_of(file):
    """A path to read: `file` as Proton passes it (an open file), or a path. A file object with no
    path of its own (io.StringIO) is copied to a temporary file, removed with the GraphFrame."""
    if isinstance(file, (str, bytes, os.PathLike)):
        return os.fsdecode(os.fspath(file)), None
    name = getattr(file, "name", None)
    if isinstance(name, str) and os.path.isfile(name):
        return name, None
    text = file.read()
    with tempfile.NamedTemporaryFile("wb", suffix=".hatchet", delete=False) as copy:
        copy.write(text.encode() if isinstance(text, str) else text)
    return copy.name, copy.name


def _frame(source, include=None, exclude=None):
    """The GraphFrame of `source` with our filters, its derived columns named as Proton names them."""
    names = {spec: name for name, spec in source.derived.items()}
    profile = read_profile(source.path, metrics=list(names) or None, include=include, exclude=exclude)
    gf = profile.to_graphframe()
    frame = gf.dataframe
    # read() derives its default columns when given none: a raw frame has none of them.
    frame.drop(columns=[m for m in profile.metrics if m not in names], inplace=True)
    frame.rename(columns=names, inplace=True)
    gf.inc_metrics = [m for m in gf.inc_metrics if m not in profile.metrics]
    gf.inc_metrics += [name for name in names.values() if name != "util"]
    gf.exc_metrics += [name for name in names.values() if name == "util"]
    if source.format is not None:
        frame["name"] = [format_frame(name, source.format) for name in frame["name"]]
    setattr(gf, _SOURCE, source)
    return gf, profile


def get_raw_metrics(file):
    """``(gf, inclusive_metrics, exclusive_metrics, device_info)`` as Proton's: the metric names in
    the file (which hatchet calls inclusive: it sums them per subtree) and the other columns."""
    path, temporary = _path_of(file)
    try:
        gf, profile = _frame(_Source(path))
    except BaseException:
        if temporary:
            os.remove(temporary)
        raise
    if temporary:
        weakref.finalize(getattr(gf, _SOURCE), os.remove, temporary)
    return gf, list(profile.stored_metrics), ["name"] + profile.identifiers, profile.device_info


def read(filename):
    """Proton's ``read``: get_raw_metrics with the inclusive columns (ours always have them)."""
    gf, inclusive, exclusive, device_info = get_raw_metrics(filename)
    if not inclusive:
        raise ViewerError(f"no metrics found in {filename}")
    return gf, inclusive, exclusive, device_info


def _source(gf, call):
    source = getattr(gf, _SOURCE, None)
    if source is None:
        raise ValueError(f"{call}() works on a GraphFrame that get_raw_metrics(), read() or parse() of "
                         f"flagtree.profiler.viewer made (one from hatchet's own filter() has lost its file)")
    return source


def _proton_name(spec, inclusive_metrics):
    """The column Proton gives `spec`: util is exclusive; a stored metric named without unit is its
    inclusive column (``time`` -> ``time (ns) (inc)``); every other derived metric gets `` (inc)``."""
    if spec == "util":
        return spec
    if "/" not in spec and ":" not in spec:
        for raw in inclusive_metrics:
            if spec.lower() in (raw.lower(), raw.split("(")[0].strip().lower()):
                return f"{raw} (inc)"
    return f"{spec} (inc)"


def derive_metrics(gf, metrics, inclusive_metrics, exclusive_metrics, device_info):
    """Adds the columns of `metrics` (the viewer's ``-m`` names) to `gf` and returns their names,
    as Proton's: ``util``, ``<metric> (inc)``. `exclusive_metrics` and `device_info` are taken
    for Proton's signature: the file read again gives them."""
    source = _source(gf, "derive_metrics")
    specs = [metrics] if isinstance(metrics, str) else list(metrics)
    names = [_proton_name(spec, inclusive_metrics) for spec in specs]
    new = {name: spec for name, spec in zip(names, specs) if name not in gf.dataframe.columns}
    if new:
        source.derived.update(new)
        fresh, _ = _frame(source)
        if len(fresh.dataframe) != len(gf.dataframe):
            raise ValueError("derive_metrics(): call it before filter_frames(), as Proton's parse() does")
        for name in new:
            gf.dataframe[name] = fresh.dataframe[name].to_numpy()
            (gf.exc_metrics if name == "util" else gf.inc_metrics).append(name)
    return names


def format_frames(gf, format):
    """Proton's frame names: ``None`` or ``full`` leaves them; ``file_function_line``,
    ``function_line``, ``file_function`` (and the viewer's other ``-f`` styles) rewrite python frames."""
    if format is None or format == "full":
        return gf
    if format not in FRAME_FORMATS:
        raise ValueError(f"unknown frame format {format!r}; one of: {', '.join(FRAME_FORMATS)}")
    gf.dataframe["name"] = [format_frame(name, format) for name in gf.dataframe["name"]]
    source = getattr(gf, _SOURCE, None)
    if source is not None:
        source.format = format
    return gf


def filter_frames(gf, include=None, exclude=None, threshold=None, metric=None):
    """Proton's filters: `include` keeps the paths through nodes whose name matches, `exclude` drops
    matching nodes with their subtrees (the viewer's ``-i``/``-e``, inclusive values recomputed
    over what stays), `threshold` keeps nodes whose `metric` is at least it (Proton's absolute
    value, not the viewer's ``-t`` share of ROOT). Returns a new GraphFrame, as Proton's."""
    if include or exclude:
        gf, _ = _frame(_source(gf, "filter_frames"), include or None, exclude or None)
    if threshold:
        source = getattr(gf, _SOURCE, None)
        gf = gf.filter(lambda row: row[metric] >= threshold, squash=True)
        if source is not None:
            setattr(gf, _SOURCE, source)
    return gf


def parse(metrics, filename, include=None, exclude=None, threshold=None):
    """Proton's ``parse``: ``(gf, derived metric names)``, read, derived, then filtered on the
    first derived metric."""
    gf, inclusive, exclusive, device_info = read(filename)
    derived = derive_metrics(gf, metrics, inclusive, exclusive, device_info)
    return filter_frames(gf, include, exclude, threshold, derived[0]), derived
