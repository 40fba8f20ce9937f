"""ixKN's CSV (``ixkn-cli ... --csv``): long form, one row per metric under the header
"Kernel ID","Process ID","Process Name","Kernel Name","Context","Stream","Section","Metrics","Value".

Rows are folded per Kernel ID (one kernel launch) into one VendorRow whose metrics are named
``tianshu.<section>.<metric>`` (snake_case) with the unit of the value, if any, as `` (unit)``;
values that are no number are kept as text in the vendor.json. Rows whose Metrics is INF, WRN or
ERR are messages. A launch's ordinal is its place among the launches of its kernel name in
Kernel ID order, which is how the rows meet the profiler's launches (matching rule name_order).
Lines that do not split into the header's fields, even after repairing the quoting ixKN is
known to get wrong in Process Name, are kept as malformed lines and counted.

Only the first column, "Kernel ID", is corroborated by hardware-tested code, so columns are found
by name (case and spacing folded), in any order, extra ones ignored. "Kernel ID", "Metrics" and
"Value" are required (a clear error names the missing ones); without "Kernel Name" rows cannot
meet launches; the rest are optional. `missing_columns` lists what was absent.
"""
import csv
from collections import OrderedDict, defaultdict

from ...vendor_import.rows import VendorRow, number_and_unit, slug, to_int

HEADER = ("Kernel ID", "Process ID", "Process Name", "Kernel Name", "Context", "Stream", "Section", "Metrics",
          "Value")
REQUIRED = ("Kernel ID", "Metrics", "Value")
MESSAGE_LEVELS = ("INF", "WRN", "ERR")
SOURCE = "ixkn"


class IxknCsv:
    """What one CSV held: launches (VendorRow), messages, malformed lines."""

    def __init__(self):
        self.rows = []
        self.messages = []
        self.malformed = []
        self.metric_rows = 0
        self.missing_columns = []  # HEADER names the CSV did not have


def _folded(name):
    return " ".join(name.replace("_", " ").split()).lower()


def csv_part(text):
    """The CSV in `text` (a terminal capture: the target's own output may come first) from the
    line that starts with "Kernel ID"; None when there is none."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().lstrip('"').startswith("Kernel ID"):
            return "\n".join(lines[i:]) + "\n"
    return None


def _fields(line, width):
    """The fields of one line. A fully quoted line is split on its "," separators, which also
    repairs the unescaped quotes ixKN leaves inside Process Name; other lines go through the csv
    module. None when neither gives `width` fields."""
    stripped = line.strip()
    if len(stripped) > 1 and stripped.startswith('"') and stripped.endswith('"'):
        fields = [f.replace('""', '"') for f in stripped[1:-1].split('","')]
        if len(fields) == width:
            return fields
    try:
        fields = next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return None
    return fields if len(fields) == width else None


def parse(text, pid=None, ordinal_offsets=None):
    """Parses ixKN CSV `text` (from the header line on). `pid`: rows of other processes get no
    ordinal (they cannot be this session's launches). `ordinal_offsets`: {kernel name: launches
    ixKN skipped before its first profiled one}."""
    result = IxknCsv()
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return result
    header = next(csv.reader([lines[0]]))
    width = len(header or ())
    by_folded = {}
    for i, name in enumerate(header or ()):
        by_folded.setdefault(_folded(name), i)
    columns = {name: by_folded[_folded(name)] for name in HEADER if _folded(name) in by_folded}
    result.missing_columns = [name for name in HEADER if name not in columns]
    missing = [name for name in REQUIRED if name not in columns]
    if missing:
        raise ValueError(f"ixKN CSV header lacks the column(s) {', '.join(repr(m) for m in missing)} needed to read "
                         f"its metrics (found {', '.join(repr(h) for h in header or ())})")
    unit_column = next((by_folded[_folded(c)] for c in ("Metric Unit", "Unit") if _folded(c) in by_folded), None)
    launches = OrderedDict()  # (process, kernel id) -> VendorRow
    for number, line in enumerate(lines[1:], start=2):
        fields = _fields(line, width)
        if fields is None:
            result.malformed.append({"line": number, "text": line})
            continue
        cells = dict.fromkeys(HEADER, "")
        cells.update({name: fields[i].strip() for name, i in columns.items()})
        _take(result, launches, cells,
              fields[unit_column].strip() if unit_column is not None else "")
    _number(result, launches, pid, ordinal_offsets or {})
    return result


def _take(result, launches, cells, unit):
    key = (cells["Process ID"], cells["Kernel ID"])
    row = launches.get(key)
    if row is None:
        row = launches[key] = VendorRow(source=SOURCE, name=cells["Kernel Name"], stream_id=to_int(cells["Stream"]),
                                        raw={"kernel_id": cells["Kernel ID"], "process_id": cells["Process ID"],
                                             "process_name": cells["Process Name"], "context": cells["Context"],
                                             "stream": cells["Stream"]})
    metric = cells["Metrics"]
    if metric.upper() in MESSAGE_LEVELS:
        result.messages.append({"level": metric.upper(), "kernel_id": cells["Kernel ID"],
                                "kernel_name": cells["Kernel Name"], "section": cells["Section"],
                                "text": cells["Value"]})
        return
    result.metric_rows += 1
    value, parsed_unit = number_and_unit(cells["Value"])
    unit = unit or parsed_unit
    section = f"{slug(cells['Section'])}." if cells["Section"] else ""
    name = f"tianshu.{section}{slug(metric)}" + (f" ({unit})" if unit else "")
    if value is None:
        row.values[name] = cells["Value"]
    else:
        row.metrics[name] = value


def _number(result, launches, pid, offsets):
    """Ordinals per kernel name in Kernel ID order (numeric ids sort numerically)."""
    def order(item):
        (process, kernel_id), _ = item
        numeric = to_int(kernel_id)
        return (process, numeric if numeric is not None else float("inf"), kernel_id)

    seen = defaultdict(int)
    for (process, _), row in sorted(launches.items(), key=order):
        if pid is None or not process or to_int(process) == pid:  # no Process ID column: assume ours
            row.ordinal = offsets.get(row.name, 0) + seen[row.name]
            seen[row.name] += 1
        result.rows.append(row)
