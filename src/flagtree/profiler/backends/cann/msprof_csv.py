"""msprof's exported CSVs (``msprof --export=on --type=text --summary-format=csv``): op_summary,
task_time and bandwidth files, and torch_npu's kernel_details.csv. Header spellings vary between
CANN versions ("Task ID", "task_id", "Task Start Time(us)", "task_start(us)"), so each header is
normalised (case, spaces, unit in parentheses) before it is read. Values may carry the leading
tab msprof writes to keep spreadsheets from mangling long numbers.

Each data row becomes a VendorRow: ids (correlation, task, device, stream) where the file has
them, the start and end converted from the file's microseconds (host realtime) to the profiler's
monotonic nanoseconds, and every other numeric column as metric ``cann.<column> (<unit>)``.
"""
import csv
import glob
import os
import re

from ...vendor_import.rows import VendorRow, kernel_key, number_and_unit, to_int

KINDS = (("op_summary", "msprof.op_summary"), ("task_time", "msprof.task_time"),
         ("bandwidth", "msprof.bandwidth"), ("kernel_details", "torch_npu.kernel_details"))
_ALIASES = {
    "correlation_id": ("correlation_id", "correlationid"),
    "task_id": ("task_id", "taskid"),
    "device_id": ("device_id", "deviceid", "device"),
    "stream_id": ("stream_id", "streamid", "stream"),
    "name": ("op_name", "opname", "kernel_name", "name"),
    "start": ("task_start_time", "task_start", "start_time", "start"),
    "end": ("task_stop", "task_end_time", "end_time", "end"),
    "duration": ("task_duration", "task_time", "duration"),
}
_TEXT = {"op_type", "task_type", "type", "accelerator_core", "model_name", "input_shapes", "input_data_types",
         "input_formats", "output_shapes", "output_data_types", "output_formats", "kernel_type", "step_id"}
_TO_NS = {"us": 1e3, "ns": 1.0, "ms": 1e6, "s": 1e9}


def normal_header(text):
    """(key, unit): "Task Start Time(us)" -> ("task_start_time", "us"), "Device_id" -> ("device_id", None)."""
    text = str(text).replace("\ufeff", "").strip()
    unit = None
    found = re.search(r"\(([^()]*)\)\s*$", text)
    if found:
        unit, text = found.group(1).strip() or None, text[:found.start()]
    key = re.sub(r"[^0-9a-z]+", "_", text.lower()).strip("_")
    return key, unit


def kind_of(path):
    base = os.path.basename(path).lower()
    return next((source for prefix, source in KINDS if prefix in base), None)


def find_csvs(folder):
    """The CSVs msprof exported under `folder` (any depth) that this importer reads, sorted."""
    paths = glob.glob(os.path.join(glob.escape(folder), "**", "*.csv"), recursive=True)
    return sorted(p for p in paths if kind_of(p))


def read_file(path, clock_offset_ns=0):
    """The VendorRows of one CSV. `clock_offset_ns`: realtime minus monotonic (the file's times
    are host realtime microseconds; the launches' are monotonic nanoseconds)."""
    source = kind_of(path) or "msprof"
    with open(path, newline="", encoding="utf-8", errors="replace") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if not header:
            return []
        columns = [normal_header(h) for h in header]
        return [row for row in (_row(source, columns, cells, clock_offset_ns) for cells in reader) if row is not None]


def _column(columns, field):
    for alias in _ALIASES[field]:
        for i, (key, unit) in enumerate(columns):
            if key == alias:
                return i, unit
    return None, None


def _time_ns(cells, columns, field, offset):
    i, unit = _column(columns, field)
    if i is None or i >= len(cells):
        return None
    value, _ = number_and_unit(cells[i].strip())
    if value is None:
        return None
    scale = _TO_NS.get((unit or "us").lower(), 1e3)
    return round(value * scale) - (offset if field != "duration" else 0)


def _row(source, columns, cells, offset):
    if not any(c.strip() for c in cells):
        return None
    cells = [c.strip() for c in cells]
    used = set()

    def take(field, convert=to_int):
        i, _ = _column(columns, field)
        if i is None or i >= len(cells):
            return None
        used.add(i)
        return convert(cells[i])

    row = VendorRow(source=source, name=kernel_key(take("name", str) or ""),
                    correlation_id=take("correlation_id"), task_id=take("task_id"),
                    device_id=take("device_id"), stream_id=take("stream_id"),
                    raw={header_key: cell for (header_key, _), cell in zip(columns, cells)})
    row.start_ns = _time_ns(cells, columns, "start", offset)
    end = _time_ns(cells, columns, "end", offset)
    duration = _time_ns(cells, columns, "duration", offset)
    row.end_ns = end if end is not None else (row.start_ns + duration if row.start_ns is not None and duration else None)
    for field in ("start", "end"):
        used.add(_column(columns, field)[0])
    _metrics(row, columns, cells, used)
    return row


def _metrics(row, columns, cells, used):
    for i, (key, unit) in enumerate(columns):
        if i in used or i >= len(cells) or key in _TEXT or not key:
            continue
        value, _ = number_and_unit(cells[i])
        if value is not None:
            row.metrics[f"cann.{key}" + (f" ({unit})" if unit else "")] = value
