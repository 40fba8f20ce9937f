"""The shared layer of vendor imports (ixKN CSV for tianshu, msprof CSV for cann; each parser
lives in its backend's folder): vendor rows (rows.py), the session's launches from the native
launch log, matching with named rules in order and per-rule counts (matching.py), metrics onto
kernel nodes (attach.py), and the ``<name>.vendor.json`` report (report.py). Unmatched rows are
kept and counted, never dropped."""
from .attach import attach_in_session, attach_to_hatchet, attach_to_trace, is_additive
from .matching import IXKN_RULES, MSPROF_RULES, Match, MatchResult, match_rows
from .report import UNMATCHED_HOLDER, metadata_counts, vendor_document
from .rows import Launch, VendorRow, kernel_key, launches_from_log, number_and_unit, session_launches, slug, to_int

__all__ = ["attach_in_session", "attach_to_hatchet", "attach_to_trace", "is_additive", "IXKN_RULES",
           "MSPROF_RULES", "Match", "MatchResult", "match_rows", "UNMATCHED_HOLDER", "metadata_counts",
           "vendor_document", "Launch", "VendorRow", "kernel_key", "launches_from_log",
           "number_and_unit", "session_launches", "slug", "to_int"]
