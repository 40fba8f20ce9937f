"""What the stateful API fuzz checks of the files a session wrote (after its finalize), against
the model's Record (api_fuzz_model.py): strict JSON, the outputs its metadata lists, the launches
each data kind holds (parts summed) and, where the model knows each part exactly, every part's
launches by shadow path and its scope metrics; and, after a sequence, that no temporary file is left."""
import collections
import math
import os
import re

from flagtree.profiler.viewer.profile_tree import load_profiles, release
from support.api_fuzz_model import EXTENSIONS, Misbehaved
from support.json_check import load_strict

SKIPPED_METRICS = ("cpu_time (ns)",)  # a wall time the model cannot know
PYTHON_FRAME = re.compile(r"^.+:\d+@.+$", re.S)
HIDDEN_FRAMES = (os.sep + os.path.join("flagtree", "profiler") + os.sep, os.sep + "triton" + os.sep)
LAUNCHERS = ("@launch_add", "@launch_copy", "@launch_meta")


def kernels_in(loaded, trace):
    """Kernel launches by path (scopes, state, kernel): counts of a tree's kernel nodes, or the
    kernel events of a trace (their call stack)."""
    found = collections.Counter()
    if trace:
        found.update(tuple(e["args"]["call_stack"][1:]) for e in loaded["traceEvents"] if e.get("cat") == "kernel")
        return found
    stack = [(child, ()) for child in loaded[0]["children"]]
    while stack:
        node, names = stack.pop()
        path = names + (node["frame"]["name"],)
        if node["frame"].get("kind") == "kernel":
            found[path] += node["metrics"]["count"]
        stack.extend((child, path) for child in node["children"])
    return found


def scope_metrics_in(loaded):
    """{node path: metrics} of a tree's scope and state nodes that hold metrics of their own; a
    path's steps are (kind, name): a scope and a state of one name may be siblings."""
    found = {}
    stack = [(child, ()) for child in loaded[0]["children"]]
    while stack:
        node, names = stack.pop()
        path = names + ((node["frame"].get("kind"), node["frame"]["name"]),)
        metrics = {k: v for k, v in node["metrics"].items() if k not in SKIPPED_METRICS}
        if node["frame"].get("kind") != "kernel" and metrics:
            found[path] = metrics
        stack.extend((child, path) for child in node["children"])
    return found


def _written(value):
    """A model value as the writers keep strict JSON: NaN and the infinities as null."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b and type(a) is type(b)


def check_metrics(where, written, model):
    expected = {node: {name: _written(value) for name, (_, value) in held.items()} for node, held in model.items()}
    expected = {node: held for node, held in expected.items() if held}
    if written.keys() != expected.keys() or any(
            written[n].keys() != expected[n].keys() or not all(_same(written[n][k], v) for k, v in expected[n].items())
            for n in expected):
        raise Misbehaved(f"{where}: scope metrics written {written}, the model's {expected}")


def read_tree(path):
    """The viewer's reader (read()'s and the command's) takes every tree the profiler writes."""
    try:
        release(load_profiles([path]).root)
    except Exception as error:
        raise Misbehaved(f"read({path!r}) refused a tree the profiler wrote: "
                         f"{type(error).__name__}: {error}") from error


def check_written(record):
    """After a session's finalize: its metadata and every output it lists."""
    meta = load_strict(record.metadata)
    if meta.get("failed_parts"):
        raise Misbehaved(f"session {record.id}: failed parts {meta['failed_parts']}")
    if meta.get("data") != ",".join(record.kinds):
        raise Misbehaved(f"session {record.id}: metadata says data={meta.get('data')!r}, started with {record.kinds}")
    files = {kind: [] for kind in record.kinds}
    for path in meta["outputs"]:
        if not os.path.isfile(path):
            raise Misbehaved(f"session {record.id}: output {path!r} listed in its metadata is missing")
        files[next(kind for ext, kind in EXTENSIONS.items() if path.endswith(ext))].append(path)
    parts = record.parts + [(record.paths, record.metrics)]
    totals = {}
    for kind, paths in files.items():
        where = f"session {record.id} ({record.base!r}, {kind})"
        if record.exact and len(paths) != (len(parts) if len(parts) > 1 else 1):
            raise Misbehaved(f"{where}: {len(paths)} outputs {paths}, the model cut {len(parts) - 1} parts")
        if kind != "perfetto":
            totals[kind] = _check_parts(where, record, kind, paths, parts)
    if len(totals) == 2 and totals["tree"] != totals["trace"]:  # one session's launches, two views
        raise Misbehaved(f"session {record.id} ({record.base!r}): its tree holds the kernels {dict(totals['tree'])}, "
                         f"its trace {dict(totals['trace'])}")


def _check_parts(where, record, kind, paths, parts):
    loaded = [load_strict(path) for path in paths]
    for path in paths if kind == "tree" else ():
        read_tree(path)
    written = [kernels_in(one, kind == "trace") for one in loaded]
    total = sum(written, collections.Counter())
    if not record.launches <= sum(total.values()) <= record.launches + record.maybe:
        raise Misbehaved(f"{where}: {sum(total.values())} kernel launches written, {record.launches} made while "
                         f"it was active (and {record.maybe} while a race changed it; outputs {paths})")
    if record.context == "python":
        check_python_paths(where, total)
    if record.context != "shadow" or record.maybe:
        return total
    expected = sum((launched for launched, _ in parts), collections.Counter())
    if total != +expected:
        raise Misbehaved(f"{where}: kernels written under {dict(total)}, launched under {dict(+expected)}")
    if not record.exact:
        return total
    for path, one, found, (launched, metrics) in zip(paths, loaded, written, parts):
        if found != +launched:
            raise Misbehaved(f"{where}: {path} holds {dict(found)}, its part's launches were {dict(+launched)}")
        if kind == "tree":
            check_metrics(f"{where}: {path}", scope_metrics_in(one), metrics)
    return total


def check_python_paths(where, found):
    """A python session's kernels lie under the Python frames of their launch, outermost first, each
    `<file>:<line>@<function>`: none of this package's or Triton's, the launching helper's last,
    called from the fuzz's op_launch; then the state, if any, and the kernel."""
    for path in found:
        frames, kernel = path[:-1], path[-1]
        if frames and not frames[-1].endswith(LAUNCHERS):  # the thread's state, below the frames
            frames = frames[:-1]
        bad = [f for f in frames if not PYTHON_FRAME.match(f) or any(part in f for part in HIDDEN_FRAMES)]
        if bad or len(frames) < 2 or not frames[-1].endswith(LAUNCHERS) or not frames[-2].endswith("@op_launch"):
            raise Misbehaved(f"{where}: kernel {kernel!r} under the Python frames {frames}: {bad or 'not its launch'}")


def check_folder(folder):
    """After a sequence: no temporary file left anywhere below `folder`, every JSON output strict."""
    for parent, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(parent, name)
            if name.endswith(".tmp") or ".tmp." in name:
                raise Misbehaved(f"temporary file left behind: {path!r}")
            if name.endswith((".hatchet", ".chrome_trace", ".json")):
                try:
                    load_strict(path)
                except (ValueError, AssertionError, UnicodeDecodeError) as error:
                    raise Misbehaved(f"{path!r} is not strict JSON: {error}") from error
