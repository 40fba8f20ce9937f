"""Where a session's files go: the name a user gives (a path without extension), its check, and
every file name a session writes (output_paths). Names of one process: ``<name>.meta.json`` for
the first data kind that uses a name; a session of the other kind with the same name gets
``<name>.<ext>.meta.json`` (``x.chrome_trace.meta.json`` beside ``x.meta.json``), so two sessions
never write one metadata file.

Under a distributed launch every name gets the process's rank first (ranked_name):
``<name>.rank<r>.hatchet``, ``<name>.rank<r>.part<k>.hatchet``, ``<name>.rank<r>.meta.json``;
parse_output_name and output_stem read those names back (viewer, gather, the trace merger): no
other module parses them."""
import os
import re
import tempfile
from typing import NamedTuple

from .common.safe_text import is_utf8

# The name a session writes under when start() is given none (Proton's is "proton"): the
# package's own, so that both tools' default outputs in one folder never overwrite each other.
DEFAULT_PROFILE_NAME = "flagtree"
METADATA_SUFFIX = ".meta.json"
EXTENSIONS = {"tree": ".hatchet", "trace": ".chrome_trace", "perfetto": ".pftrace"}
# ((<base>)[.rank<r>])[.part<k>]<extension>; the base is the shortest that leaves a match, so
# the rank and part are the last ones before the extension.
_OUTPUT_FILE = re.compile(r"^((.*?)(?:\.rank(\d+))?)(?:\.part(\d+))?(" +
                          "|".join(re.escape(e) for e in EXTENSIONS.values()) + r")$", re.S)


def ranked_name(name, rank):
    """The name (no extension) a process of rank `rank` writes under; rank None: `name`."""
    return name if rank is None else f"{name}.rank{rank}"


class OutputPaths(NamedTuple):
    """Every file name one session writes."""
    output: str  # the whole-run file: <name>.hatchet, <name>.chrome_trace or <name>.pftrace
    metadata: str
    part_stem: str  # part k is f"{part_stem}{k}{extension}"
    extension: str

    def part(self, k):
        return f"{self.part_stem}{k}{self.extension}"


def output_paths(name, data, shared_name=False):
    """The files of a session named `name` (no extension) collecting `data`; `shared_name`:
    a session of another data kind used the name first, so the metadata file takes this
    session's extension too (see the module docstring)."""
    extension = EXTENSIONS[data]
    metadata = f"{name}{extension}{METADATA_SUFFIX}" if shared_name else f"{name}{METADATA_SUFFIX}"
    return OutputPaths(name + extension, metadata, f"{name}.part", extension)


# Files beside a session's profile, named from the session's name (no extension): a vendor
# import's report and raw CSV, tianshu's launch log, instrumentation's device scopes, the folder
# aclprof collects into, and the timeline merged from gathered ranks.
SIDE_FILES = {"vendor": ".vendor.json", "launch_log": ".launches.json", "ixkn_csv": ".ixkn.csv",
              "device_scopes": ".device_scopes.json", "aclprof": ".aclprof", "merged_trace": ".merged.chrome_trace"}
IXKN_REPORT = ".ixkn-rep"  # what ixkn-cli adds to --export-profile


def side_file(name, kind):
    """The file of `kind` (a SIDE_FILES key) beside the session named `name`."""
    return name + SIDE_FILES[kind]


def profile_file(name, data):
    """The whole-run profile of a session named `name` collecting `data`."""
    return name + EXTENSIONS[data]


def metadata_candidates(name, data):
    """Where the metadata of a `data` session named `name` may be, the own-extension name first
    (output_paths: a session of another kind may have taken the plain one)."""
    return (output_paths(name, data, shared_name=True).metadata, output_paths(name, data).metadata)


def is_metadata(path):
    """Whether `path` is a session's metadata file (``<name>[.<ext>].meta.json``)."""
    return path.endswith(METADATA_SUFFIX)


class OutputName(NamedTuple):
    """A profile's file name read back: ``<stem>[.part<k>]<extension>``, where the stem is
    ``<base>[.rank<r>]`` (the name the session wrote under, its rank included)."""
    stem: str
    base: str
    rank: object  # int, or None when the name carries no rank
    part: object  # int, or None for the whole-run file
    extension: str


def parse_output_name(path):
    """The OutputName of `path` (a file name or a path), or None when it is not a profile's name."""
    match = _OUTPUT_FILE.match(path)
    if match is None:
        return None
    stem, base, rank, part, extension = match.groups()
    return OutputName(stem, base, None if rank is None else int(rank),
                      None if part is None else int(part), extension)


def output_stem(path):
    """`path` without its part number and extension (``run.rank1.part3.hatchet`` ->
    ``run.rank1``), the name its metadata and sibling outputs go under; `path` itself when it
    is not a profile's name."""
    name = parse_output_name(path)
    return path if name is None else name.stem


def part_stem(path):
    """``<name>.part`` of a part file ``<name>.part<k><extension>``."""
    return path[:path.rindex(".part") + len(".part")]


def base_name(name):
    if name is not None and not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"flagtree.profiler.start: name must be a path string (the output path without "
                        f"extension), got {name!r} ({type(name).__name__})")
    base = os.fspath(name) if name is not None else DEFAULT_PROFILE_NAME
    if not isinstance(base, str) or not base:
        raise ValueError(f"name must be a non-empty path string, got {name!r}")
    if "\x00" in base:  # no file name holds one: start() would pass and finalize fail to write
        raise ValueError(f"name {base!r} holds a NUL character, which no file name can")
    if not is_utf8(base):
        # A lone surrogate (os.fsdecode's for a byte that is not UTF-8) makes a file here, but the
        # native writer takes UTF-8 paths and the metadata lists them in JSON: finalize would fail.
        raise ValueError(f"name {base!r} holds a lone surrogate, which UTF-8 cannot encode: the profile's "
                         f"file names must be UTF-8 text")
    for ext in EXTENSIONS.values():
        if base.endswith(ext):
            base = base[: -len(ext)]
    # "runs/" (or "runs/.hatchet") names a folder: check_writable would try the folder above it and
    # finalize fail to write "runs/.hatchet" (or, for "runs/." and "./", write hidden "..hatchet").
    if os.path.basename(base) in ("", ".", ".."):
        raise ValueError(f"name {name!r} names a folder, not a file: give the output path without extension "
                         f"(e.g. 'runs/step')")
    return base


# folder -> what os.stat said of it when a temporary file was last made there (check_writable)
_writable = {}
_WRITABLE_KEPT = 64


def _identity(directory):
    """The folder's device, inode, mode and owner; None when there is none."""
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid


def check_writable(base):
    """At start(): the output folder exists (made if need be) and takes a new file, else a
    ValueError now rather than at finalize. A folder that took one is not tried again while
    os.stat finds the same folder, mode and owner: the temporary file cost every start() of a
    session per step (docs/performance.md); a write refused later still fails at finalize."""
    directory = os.path.dirname(os.path.abspath(base)) or "."
    known = _identity(directory)
    if known is not None and _writable.get(directory) == known:
        return
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        raise ValueError(f"cannot write the profile to {base!r}: {error.strerror or error}") from None
    if len(_writable) >= _WRITABLE_KEPT:
        _writable.clear()
    _writable[directory] = _identity(directory)
