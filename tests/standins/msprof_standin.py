#!/usr/bin/env python3
"""Stand-in for Ascend's msprof export: ``msprof --export=on --type=text --summary-format=csv
--output=<PROF dir>`` copies the CSVs of $MSPROF_STANDIN_CSV_DIR into
<PROF dir>/mindstudio_profiler_output/, as the real export writes its summaries there. It fails
as msprof would on a folder aclprof did not write, and records its command line."""
import os
import shutil
import sys


def main(argv):
    options = dict(a.split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    expected = {"--export": "on", "--type": "text", "--summary-format": "csv"}
    if any(options.get(k) != v for k, v in expected.items()) or "--output" not in options:
        print(f"msprof: unsupported arguments {argv}", file=sys.stderr)
        return 1
    folder = options["--output"]
    if not os.path.isfile(os.path.join(folder, "standin_calls.txt")):
        print(f"msprof: {folder} is no profiling result folder", file=sys.stderr)
        return 1
    with open(os.path.join(folder, "standin_calls.txt"), "a") as log:
        log.write("msprof " + " ".join(argv) + "\n")
    out = os.path.join(folder, "mindstudio_profiler_output")
    os.makedirs(out, exist_ok=True)
    source = os.environ.get("MSPROF_STANDIN_CSV_DIR", "")
    for name in sorted(os.listdir(source)) if source else ():
        shutil.copy(os.path.join(source, name), os.path.join(out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
