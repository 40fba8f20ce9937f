"""`<name>.vendor.json`: what a vendor import found and where each row went, in the public
prior art's field names (schema_version, backend, importer, requested/enabled metrics,
raw_inputs, summary, degrade_reasons, associations {runtime_event, state, source, note,
metrics}), plus the rule that placed each row. Written through writers/atomic.py (strict JSON,
atomic, fsynced)."""
from collections import Counter, defaultdict

SCHEMA_VERSION = 1
UNMATCHED_HOLDER = "<unmatched vendor rows>"


def runtime_event(launch, row):
    """The launch a row was placed on, in the prior art's runtime_event fields (the row's own
    ids and times when it fits no launch)."""
    if launch is None:
        return {"scope_id": None, "op_name": row.name, "task_id": row.task_id, "correlation_id": row.correlation_id,
                "device_id": row.device_id, "stream_id": row.stream_id, "start_time_ns": row.start_ns,
                "end_time_ns": row.end_ns}
    return {"scope_id": launch.node, "scope_path": [name for _, name in launch.path], "op_name": launch.kernel_name,
            "task_id": row.task_id, "correlation_id": launch.correlation, "device_id": launch.device_id,
            "stream_id": launch.stream_id, "start_time_ns": launch.start_ns, "end_time_ns": launch.end_ns,
            "launch_index": launch.index}


def association(match):
    row = match.row
    if match.launch is None:
        state, note = "unmatched", f"no launch fits this row; kept under {UNMATCHED_HOLDER}"
    else:
        state, note = "collected", f"matched by {match.rule}"
    return {"runtime_event": runtime_event(match.launch, row), "state": state, "source": row.source,
            "rule": match.rule, "note": note, "metrics": dict(row.metrics), "values": dict(row.values),
            "vendor_row": dict(row.raw)}


def summary(result, launches):
    by_source = Counter()
    by_state = Counter()
    by_source_state = defaultdict(Counter)
    for m in result.matches:
        state = "unmatched" if m.launch is None else "collected"
        by_source[m.row.source] += 1
        by_state[state] += 1
        by_source_state[m.row.source][state] += 1
    return {"rows": len(result.matches), "by_source": dict(by_source), "by_state": dict(by_state),
            "by_source_and_state": {k: dict(v) for k, v in by_source_state.items()},
            "by_rule": dict(result.by_rule), "time_only_matches": result.time_only,
            "unmatched_rows": result.unmatched, "launches": len(launches),
            "launches_matched": len({m.launch.index for m in result.matches if m.launch is not None})}


def vendor_document(*, backend, importer, requested, enabled, raw_inputs, result, launches,
                    degrade_reasons=(), extra=None):
    document = {"schema_version": SCHEMA_VERSION, "backend": backend, "importer": importer,
                "requested_metrics": list(requested), "enabled_metrics": list(enabled),
                "raw_inputs": list(raw_inputs), "summary": summary(result, launches),
                "degrade_reasons": list(degrade_reasons),
                "associations": [association(m) for m in result.matches]}
    document.update(extra or {})
    return document


def metadata_counts(document, path):
    """The counts a session's metadata file carries about its vendor import."""
    s = document["summary"]
    return {"vendor_json": path, "vendor_rows": s["rows"], "vendor_rows_matched": s["rows"] - s["unmatched_rows"],
            "vendor_rows_unmatched": s["unmatched_rows"], "vendor_rows_by_rule": s["by_rule"],
            "vendor_rows_time_only": s["time_only_matches"], "vendor_degrade_reasons": document["degrade_reasons"]}
