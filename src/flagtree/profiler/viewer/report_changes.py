"""The diff report's first table: the kernels whose total time changed most between the two
profiles (summed by name over their calling contexts, as the top-kernels table), largest change
first, with the counts on both sides; a kernel on one side only is 'new' or 'gone'."""
from .numbers import format_duration
from .report_summary import TOP_ROWS, _walk

HEAD = ["kernel", "this", "other", "change", "change %", "count (this / other)"]


def _totals(root, values_of, time_at, count_at):
    """{kernel name: [time ns, count]} over the kernels not under another kernel."""
    time_of = lambda node: values_of(node)[time_at]
    out = {}
    for node in _walk(root, time_of)[0]:
        row = out.setdefault(node.name, [0, 0])
        values = values_of(node)
        row[0] += values[time_at] or 0
        row[1] += (values[count_at] if count_at is not None else None) or 0
    return out


def _signed(ns):
    return ("+" if ns > 0 else "") + format_duration(ns)


def _percent(mine, theirs):
    if not theirs:
        return "new"
    if not mine:
        return "gone"
    return f"{100.0 * (mine - theirs) / theirs:+.1f}%"


def biggest_changes(profile, other, column, values_of, other_values):
    """The summary's `changes` table, or None without times to compare."""
    time_at, count_at = column.get("time/ns"), column.get("count")
    if time_at is None:
        return None
    mine = _totals(profile.root, values_of, time_at, count_at)
    theirs = _totals(other.root, other_values, time_at, count_at)
    changes = [(name, mine.get(name, [0, 0]), theirs.get(name, [0, 0])) for name in set(mine) | set(theirs)]
    changes.sort(key=lambda item: (-abs(item[1][0] - item[2][0]), item[0]))
    rows = [[name, format_duration(a[0]), format_duration(b[0]), _signed(a[0] - b[0]), _percent(a[0], b[0]),
             f"{a[1]:,.0f} / {b[1]:,.0f}"] for name, a, b in changes[:TOP_ROWS]]
    return {"head": HEAD, "rows": rows, "total": len(changes)}
