"""Importing ixKN's CSV into a profile, in process (tianshu's ``ixkn_import_path=``) or after
the run (the ``--ixkn`` wrapper). Both match with rule name_order and write ``<name>.vendor.json``."""
import subprocess

from . import ixkn_csv
from ...vendor_import.matching import IXKN_RULES, match_rows
from ...vendor_import.report import metadata_counts, vendor_document
from ...paths import IXKN_REPORT
from ...writers.atomic import write_json

# tianshu's vendor_metrics names -> the ixKN sections they stand for: the identifier that
# ixkn-cli's --section takes, and the display name its CSV's Section column holds.
SECTIONS = {"launch_stats": "Launch Statistics", "occupancy": "Occupancy",
            "instruction": "Instruction Statistics", "memory": "Memory Access"}
SECTION_IDS = {"launch_stats": "LaunchStats", "occupancy": "Occupancy", "instruction": "Instruction",
               "memory": "Memory"}
# Display names whose identifier is known, so that --ixkn-section may be given either way.
DISPLAY_TO_ID = {SECTIONS[k]: SECTION_IDS[k] for k in SECTIONS}


def section_value(metrics=(), given=()):
    """ixkn-cli's --section value: one comma-separated list of section identifiers, from the
    --ixkn-section values `given` (identifiers, known display names, or comma lists of them),
    else from tianshu's vendor `metrics`; None when neither names a section (ixKN's default)."""
    wanted = [part.strip() for value in given for part in value.split(",") if part.strip()]
    if not wanted:
        wanted = [SECTION_IDS[m] for m in metrics]
    ids = []
    for section in wanted:
        section = DISPLAY_TO_ID.get(section, section)
        if section not in ids:
            ids.append(section)
    return ",".join(ids) or None


def printable(text):
    """`text` with control characters escaped, for a terminal."""
    return "".join(c if c.isprintable() or c == " " else f"\\x{ord(c):02x}" for c in text)


def report_csv(ixkn_cli, report, timeout=600):
    """The CSV of a saved report (``ixkn-cli -i <report> --csv``); raises RuntimeError saying why not."""
    try:
        done = subprocess.run([ixkn_cli, "-i", report, "--csv"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise RuntimeError(f"re-importing {report} with {ixkn_cli} failed: {error}") from None
    part = ixkn_csv.csv_part(done.stdout)
    if part is None:
        raise RuntimeError(f"{ixkn_cli} -i {report} --csv printed no CSV (exit status {done.returncode}): "
                           f"{printable(done.stderr.strip()[:300])}")
    return part


def read_input(path, ixkn_cli=None):
    """CSV text from `path`: a CSV file (or a terminal capture holding one), or an .ixkn-rep report
    (re-imported with ixkn-cli)."""
    if path.endswith(IXKN_REPORT):
        if not ixkn_cli:
            raise RuntimeError(f"{path} is an ixKN report; reading it needs ixkn-cli (set FLAGTREE_PROFILER_IXKN_CLI)")
        return report_csv(ixkn_cli, path)
    with open(path, encoding="utf-8", errors="replace") as handle:
        part = ixkn_csv.csv_part(handle.read())
    if part is None:
        raise RuntimeError(f"{path} holds no ixKN CSV (no line starting with \"Kernel ID\")")
    return part


def import_csv(text, launches, *, pid=None, ordinal_offsets=None):
    """(parsed CSV, MatchResult) for CSV `text` against `launches`."""
    parsed = ixkn_csv.parse(text, pid=pid, ordinal_offsets=ordinal_offsets)
    return parsed, match_rows(parsed.rows, launches, IXKN_RULES)


def write_vendor_json(path, parsed, result, launches, *, requested, raw_inputs, degrade_reasons=()):
    """Writes `<name>.vendor.json`; returns the counts for the metadata file (messages included)."""
    reasons = list(degrade_reasons)
    if parsed.malformed:
        reasons.append(f"{len(parsed.malformed)} CSV lines did not split into the header's fields; kept in "
                       f"malformed_lines, not imported")
    if "Kernel Name" in parsed.missing_columns:
        reasons.append("the CSV has no \"Kernel Name\" column: its rows cannot be matched to launches")
    elif parsed.missing_columns:
        reasons.append(f"the CSV lacks the column(s) {', '.join(parsed.missing_columns)}; read without them")
    enabled = sorted({k for k, section in SECTIONS.items()
                      if any(m.startswith(f"tianshu.{ixkn_csv.slug(section)}.") for r in parsed.rows for m in r.metrics)})
    document = vendor_document(backend="tianshu", importer="ixkn", requested=requested, enabled=enabled,
                               raw_inputs=raw_inputs, result=result, launches=launches, degrade_reasons=reasons,
                               extra={"messages": parsed.messages, "malformed_lines": parsed.malformed,
                                      "metric_rows": parsed.metric_rows,
                                      "missing_columns": parsed.missing_columns})
    write_json(path, document, indent=1)
    counts = metadata_counts(document, path)
    counts["ixkn_messages"] = parsed.messages
    counts["ixkn_metric_rows"] = parsed.metric_rows
    counts["ixkn_malformed_lines"] = len(parsed.malformed)
    return counts
