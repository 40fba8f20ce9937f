"""What the stateful API fuzz (api_fuzz_run.py) expects of each call, and how it checks what the
sessions wrote: a model of the sessions a sequence started (open or not, active or not, the launches
each must hold) and of the errors the public API documents (docs/reference/api.md)."""
import collections
import numbers
import os

from support.json_check import load_strict

CLEAR = (TypeError, ValueError, RuntimeError)
NEVER_ISSUED = 10 ** 6  # an id no start() in the process returned (with the sequence's index added)
EXTENSIONS = {".hatchet": "tree", ".chrome_trace": "trace", ".pftrace": "perfetto"}
DATA_KINDS = ("tree", "trace", "perfetto")
WRITTEN_KEYS = ("count", "time (ns)", "cpu_time (ns)", "device_id", "device_type")
FORMATS = {"tree": "hatchet", "trace": "chrome_trace"}


class Misbehaved(AssertionError):
    """The API broke one of the fuzz's invariants."""


class Record:
    """One session the sequence started: what the model says of it."""

    def __init__(self, session_id, base, kinds, context, plan, metadata):
        self.id, self.base, self.kinds, self.context = session_id, base, kinds, context
        self.plan = plan  # flagtree.profiler.schedule(...) or None
        self.step = 0
        self.open = True
        self.launches = 0  # launches made while it was open and active
        self.maybe = 0  # launches made while a race's call opened, closed or paused it: counted or not
        self.window = False  # a window of an armed trigger (api_fuzz_arm.py)
        self.hook = False  # started with hook="triton" on the interpreter backend
        self.metadata = metadata
        self.active = plan is None or plan.action(0) == "active"
        self.parts = []  # (paths, metrics) of each part cut so far (flush_part, a schedule's window)
        self.paths = collections.Counter()  # the part being collected: launches by shadow path
        self.metrics = {}  # and its scope metrics: node path -> {name: ("sum" or "property", value)}
        # False once a part was cut or metrics given while two threads ran, or where a timer cuts parts
        self.exact = not os.environ.get("FLAGTREE_PROFILER_PERIODIC_S")

    def part(self):
        self.parts.append((self.paths, self.metrics))
        self.paths, self.metrics = collections.Counter(), {}

    def add_metrics(self, node, sums, properties):
        """As the tree store adds them: the sums first (a sum replaces a property of its name),
        then the properties (replacing whatever the node had under the name)."""
        held = self.metrics.setdefault(node, {})
        for name, value in sums:
            kind, old = held.get(name, (None, 0.0))
            held[name] = ("sum", old + value if kind == "sum" else value)
        for name, value in properties:
            held[name] = ("property", value)

    def advance(self):
        """step(): the schedule decides again from the next step (activate/deactivate held till now)."""
        self.step += 1
        self.active = self.plan.action(self.step) == "active"

    def __repr__(self):
        return f"Record(id={self.id}, base={self.base!r}, kinds={self.kinds}, open={self.open}, active={self.active})"


def split_metrics(metrics):
    """(sums, properties) of metrics the API takes, as api.md's Scope metrics table says."""
    sums, properties = [], []
    for key, value in (metrics or {}).items():
        if not key.endswith(("(pty)", "(exc)")):
            sums.append((key, float(value)))
        elif key.endswith("(exc)") and not isinstance(value, str):
            sums.append((key[:-5].strip(), float(value)))
        else:
            properties.append((key[:-5].strip(), value if isinstance(value, str) else float(value)))
    return sums, properties


def data_kinds(data):
    """The kinds start(data=...) writes, or None when it must refuse `data`."""
    if not isinstance(data, str):
        return None
    kinds = [k.strip() for k in data.split(",")]
    if any(k not in DATA_KINDS for k in kinds) or len(set(kinds)) != len(kinds):
        return None
    return kinds


def base_of(folder, label):
    """The path without extension a session named `label` writes under (None: the default name)."""
    path = os.path.join(folder, "flagtree" if label is None else label)
    for extension in EXTENSIONS:
        if path.endswith(extension):
            path = path[:-len(extension)]
    return path


def name_refused(label, folder):
    """Whether start(name=...) must refuse the sequence's session name `label`."""
    if label is None:
        return False
    if label == "" or "\x00" in label or not _text_ok(label):
        return True
    if os.path.basename(base_of(folder, label)) in ("", ".", ".."):  # names a folder
        return True
    try:
        os.fsencode(label)
    except UnicodeEncodeError:
        return True
    parent = os.path.dirname(os.path.join(folder, label))
    while parent != folder:  # a file where a folder must be made
        if os.path.isfile(parent):
            return True
        parent = os.path.dirname(parent)
    return False


def _text_ok(text):
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _number_ok(value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def metrics_refused(metrics):
    """Whether scope metrics must be refused when the scope is made (scope.py's rules, api.md)."""
    if not metrics:
        return False
    if not isinstance(metrics, dict):
        return True
    for key, value in metrics.items():
        if not isinstance(key, str):
            return True
        if not key.endswith(("(pty)", "(exc)")):
            if not _number_ok(value) or not _text_ok(key) or key in WRITTEN_KEYS:
                return True
            continue
        name = key[:-5].strip()
        if not name or name in WRITTEN_KEYS or not _text_ok(name):
            return True
        if isinstance(value, str):
            if not _text_ok(value):
                return True
        elif not _number_ok(value):
            return True
    return False


def name_refused_as_text(name):
    """Whether a scope or state name must be refused: not a str, or not UTF-8 text."""
    return type(name) is not str or not _text_ok(name)


def format_refused(output_format, records):
    """Whether finalize(..., output_format) must refuse before writing `records`."""
    if output_format is None or output_format == "":
        return False
    if output_format not in FORMATS.values():
        return True
    return any(output_format not in {FORMATS.get(k) for k in r.kinds} for r in records)


def check_error(what, error, expected):
    """An op raised `error` (None: nothing); `expected`: True when it must raise, False when it
    must not, None when either is allowed. A raised error must be a clear one with a message."""
    if error is None:
        if expected:
            raise Misbehaved(f"{what}: expected a clear error, got none")
        return
    if expected is False:
        raise Misbehaved(f"{what}: unexpected {type(error).__name__}: {error}") from error
    if not isinstance(error, CLEAR) or not str(error).strip():
        raise Misbehaved(f"{what}: not a clear error: {type(error).__name__}: {error!r}") from error
