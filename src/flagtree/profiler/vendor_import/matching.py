"""Matching vendor rows to launches: named rules tried in order, the first that finds an
unclaimed launch wins, and every row records the rule that matched it.

Rules (the prior art's order; ids before time windows, which misattribute under load):

* ``correlation_id``: the row's correlation id is the launch's;
* ``task_id``: (device, stream, task id) is known for the launch, from the backend or from a row
  of another source that matched by correlation id and carried the task id;
* ``name_device_stream_time``: same kernel name, device and stream, start within 5 ms;
* ``name_time``: same kernel name, start within 5 ms;
* ``time_only``: nearest start within 20 ms (counted apart: the weakest evidence);
* ``name_order``: the n-th row of a kernel name is that name's n-th launch (ixKN, whose rows
  carry neither ids nor times).

A launch is claimed at most once per source (op_summary and task_time rows of one launch both
match it). Rows no rule places are kept as unmatched, never dropped.
"""
import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from .rows import kernel_key

NAME_WINDOW_NS = 5_000_000
TIME_ONLY_WINDOW_NS = 20_000_000
ID_RULES = ("correlation_id", "task_id")
TIME_RULES = ("name_device_stream_time", "name_time", "time_only")
MSPROF_RULES = ID_RULES + TIME_RULES
IXKN_RULES = ("name_order",)


@dataclass
class Match:
    row: object
    launch: object = None   # None: unmatched
    rule: str = None


@dataclass
class MatchResult:
    matches: list
    by_rule: Counter = field(default_factory=Counter)
    unmatched: int = 0

    @property
    def time_only(self):
        return self.by_rule.get("time_only", 0)


class _Index:
    """Lookups over the launches, and which launches each source has claimed."""

    def __init__(self, launches, task_ids):
        self.launches = launches
        self.by_correlation = {launch.correlation: launch for launch in launches}
        self.by_task = {}  # (device or None, stream, task) -> launch
        for (device, stream, task), launch in (task_ids or {}).items():
            self.by_task[(device, stream, task)] = launch
            self.by_task.setdefault((None, stream, task), launch)
        self.claimed = defaultdict(set)  # source -> launch indexes
        self.by_key = {}
        self._build_time_lists()
        self.by_name = defaultdict(list)
        for launch in launches:
            self.by_name[kernel_key(launch.kernel_name)].append(launch)

    def _build_time_lists(self):
        groups = defaultdict(list)
        for launch in self.launches:
            name = kernel_key(launch.kernel_name)
            groups[("ndst", name, launch.device_id, launch.stream_id)].append(launch)
            groups[("nt", name)].append(launch)
            groups[("t",)].append(launch)
        for key, members in groups.items():
            members.sort(key=lambda launch: launch.start_ns)
            self.by_key[key] = ([launch.start_ns for launch in members], members)

    def free(self, source, launch):
        return launch is not None and launch.index not in self.claimed[source]

    def nearest(self, source, key, start_ns, window):
        """The unclaimed launch of group `key` whose start is nearest `start_ns`, within `window`."""
        starts, members = self.by_key.get(key, ((), ()))
        at = bisect.bisect_left(starts, start_ns)
        best, best_gap = None, window + 1
        for walk in (range(at - 1, -1, -1), range(at, len(members))):  # earlier, then later
            for i in walk:
                gap = abs(starts[i] - start_ns)
                if gap >= best_gap:
                    break
                if self.free(source, members[i]):
                    best, best_gap = members[i], gap
                    break
        return best


def _by_correlation(row, index):
    return index.by_correlation.get(row.correlation_id) if row.correlation_id is not None else None


def _by_task(row, index):
    if row.task_id is None:
        return None
    found = index.by_task.get((row.device_id, row.stream_id, row.task_id))
    return found if found is not None else index.by_task.get((None, row.stream_id, row.task_id))


def _timed(key_of, window):
    def rule(row, index):
        if row.start_ns is None:
            return None
        return index.nearest(row.source, key_of(row), row.start_ns, window)
    return rule


def _by_name_order(row, index):
    if row.ordinal is None:
        return None
    same = index.by_name.get(kernel_key(row.name), ())
    return same[row.ordinal] if row.ordinal < len(same) else None


RULES = {
    "correlation_id": _by_correlation,
    "task_id": _by_task,
    "name_device_stream_time": _timed(lambda r: ("ndst", kernel_key(r.name), r.device_id, r.stream_id),
                                      NAME_WINDOW_NS),
    "name_time": _timed(lambda r: ("nt", kernel_key(r.name)), NAME_WINDOW_NS),
    "time_only": _timed(lambda r: ("t",), TIME_ONLY_WINDOW_NS),
    "name_order": _by_name_order,
}


def match_rows(rows, launches, rules, task_ids=None):
    """Places each row (rules in order, see the module doc). `task_ids`: {(device, stream,
    task id): Launch} that the backend knows. Returns a MatchResult in row order."""
    index = _Index(launches, task_ids)
    placed = {}
    counts = Counter()
    for rule in rules:
        find = RULES[rule]
        for i, row in enumerate(rows):
            if i in placed:
                continue
            launch = find(row, index)
            if index.free(row.source, launch):
                index.claimed[row.source].add(launch.index)
                placed[i] = Match(row, launch, rule)
                counts[rule] += 1
                _learn_task(index, row, launch)
    matches = [placed.get(i) or Match(row) for i, row in enumerate(rows)]
    return MatchResult(matches, counts, sum(1 for m in matches if m.launch is None))


def _learn_task(index, row, launch):
    """A row placed by id that carries a task id teaches it for the other sources' rows."""
    if row.task_id is not None:  # files without a device column look it up under None
        index.by_task.setdefault((row.device_id, row.stream_id, row.task_id), launch)
        index.by_task.setdefault((None, row.stream_id, row.task_id), launch)
