"""The two sides of a vendor import: the rows a vendor tool wrote (VendorRow) and the launches
the profiler saw (Launch, read from the session's native launch log)."""
import math
import re
from dataclasses import dataclass, field
from ..native_core import native


@dataclass
class VendorRow:
    """One kernel launch as a vendor tool describes it. Ids and times are None when the tool
    gave none; times are nanoseconds on the host monotonic clock (importers convert)."""
    source: str                      # e.g. "ixkn", "msprof.op_summary"
    name: str
    correlation_id: int = None
    task_id: int = None
    device_id: int = None
    stream_id: int = None
    start_ns: int = None
    end_ns: int = None
    ordinal: int = None              # n-th launch of this name in the tool's order (0-based)
    metrics: dict = field(default_factory=dict)   # metric name -> number (joined to the kernel node)
    values: dict = field(default_factory=dict)    # metric name -> text the tool gave that is no number
    raw: dict = field(default_factory=dict)       # the row as read, for the vendor.json


@dataclass(frozen=True)
class Launch:
    index: int          # position in launch order
    correlation: int
    name: str
    node: int           # the kernel node it landed on (tree), its context node (trace)
    path: tuple         # ((kind, name), ...) from the root to `node`
    device_id: int
    stream_id: int
    start_ns: int
    end_ns: int
    launch_ns: int
    kernel: str = None  # the kernel's own name when `name` is a launch-metadata override

    @property
    def kernel_name(self):
        """The name vendor tools know the kernel by."""
        return self.kernel or self.name


def session_launches(slot):
    """The kernel launches of the session in `slot`, in launch order (needs the launch log on)."""
    return launches_from_log(native.session.launch_log_entries(slot))


def launches_from_log(columns):
    """Launches from the native log's columns (or a launches file's), kernels only, ordered by
    launch time: records arrive in completion order, launch order is what tools count in."""
    kernels = columns.get("kernel") or columns["name"]
    order = sorted((i for i, kind in enumerate(columns["kind"]) if kind == "kernel"),
                   key=lambda i: (columns["launch_ns"][i], columns["start_ns"][i], columns["correlation"][i]))
    return [Launch(index=k, correlation=columns["correlation"][i], name=columns["name"][i],
                   node=columns["node"][i], path=tuple(tuple(step) for step in columns["path"][i]),
                   device_id=columns["device_id"][i], stream_id=columns["stream_id"][i],
                   start_ns=columns["start_ns"][i], end_ns=columns["end_ns"][i],
                   launch_ns=columns["launch_ns"][i], kernel=kernels[i])
            for k, i in enumerate(order)]


def kernel_key(name):
    """The name two tools agree on: no surrounding space, no "void " or argument list of a
    demangled C++ signature."""
    text = (name or "").strip()
    if text.startswith("void "):
        text = text[5:]
    cut = text.find("(")
    return (text[:cut] if cut > 0 else text).strip()


_NUMBER_UNIT = re.compile(r"^\s*([-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(\S.*?)?\s*$")


def number_and_unit(text):
    """(value, unit) from vendor text such as "1,024", "12.5 us", "87.3%"; (None, None) when the
    text is no number. Non-finite values are no numbers (the outputs are strict JSON)."""
    if text is None:
        return None, None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return (float(text), None) if math.isfinite(text) else (None, None)
    match = _NUMBER_UNIT.match(str(text).replace("\t", " "))
    if not match:
        return None, None
    try:
        value = float(match.group(1).replace(",", ""))
    except ValueError:
        return None, None
    if not math.isfinite(value):
        return None, None
    return value, (match.group(2) or None)


def to_int(text):
    """An id from vendor text ("12", "\\t12", "12.0"); None when empty or no number."""
    value, unit = number_and_unit(text)
    if value is None or unit is not None or value != int(value):
        return None
    return int(value)


def slug(text):
    """snake_case of a vendor's section or metric name: "GPU Speed Of Light" -> gpu_speed_of_light."""
    return re.sub(r"[^0-9a-z]+", "_", str(text).strip().lower()).strip("_") or "unnamed"
