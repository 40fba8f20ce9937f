#!/usr/bin/env python3
"""A stand-in for Iluvatar's ixkn-cli, built from the public description (no sample exists).

Live run: ``ixkn-cli [options] app [args]`` runs the app (SIGINT/SIGTERM passed on), then prints
ixKN's long-form CSV for the launches named by IXKN_STANDIN_KERNELS, in launch order:
"add_kernel*3,copy_kernel,phantom_kernel" = three add_kernel launches, one copy_kernel, one
phantom_kernel (a kernel the profile never saw). Per launch k (Kernel ID k, from 1): the
sections asked for with --section (default Launch Statistics and Occupancy), values with units
tied to k, an INF and a WRN message row on a kernel's first launch; Process Name is quoted the
way ixKN gets wrong; one line is broken. Filters: --kernel-name, --launch-skip, --launch-count.

With -o/--export-profile it writes <f>.ixkn-rep and prints nothing, --csv or not (as the tool
does: only the re-import reads that run's rows). ``-i <report> --csv`` prints a saved report's
CSV. Exit status: the app's (128+N when signal N ended it).

As ixKN does: ``--section`` takes section identifiers (LaunchStats, Occupancy, Instruction, Memory,
SpeedOfLight, or all), as one comma-separated value; a display name ("Launch Statistics") is an
error. The app's program is run through its resolved path (symlinks followed), so a virtualenv's
python runs as the base interpreter, without the venv's site-packages.
"""
import os
import signal
import subprocess
import sys

VALUE = {"-o", "--export-profile", "-i", "--import-profile", "--page", "-k", "--kernel-name", "--kernel-id",
         "-c", "--launch-count", "-s", "--launch-skip", "--section", "--set", "--devices"}
METRICS = {
    "Launch Statistics": [("Grid Size", lambda k: f"{k * 2}"), ("Registers Per Thread", lambda k: "32 register/thread"),
                          ("Shared Memory Configuration Size", lambda k: "1,024 byte")],
    "Occupancy": [("Achieved Occupancy", lambda k: f"{10 * k}%"), ("Theoretical Occupancy", lambda k: "50 %")],
    "GPU Speed Of Light": [("Duration", lambda k: f"{k}.5 usecond")],
    "Instruction Statistics": [("Executed Instructions", lambda k: f"{1000 * k} inst")],
    "Memory Access": [("Memory Throughput", lambda k: f"{k}.25 Gbyte/second"), ("L2 Hit Rate", lambda k: "n/a")],
}
# Section identifiers (what --section takes) -> display names (what the CSV's Section column holds).
IDENTIFIERS = {"LaunchStats": "Launch Statistics", "Occupancy": "Occupancy", "SpeedOfLight": "GPU Speed Of Light",
               "Instruction": "Instruction Statistics", "Memory": "Memory Access"}
HEADER = '"Kernel ID","Process ID","Process Name","Kernel Name","Context","Stream","Section","Metrics","Value"'


def parse(argv):
    options, sections, i = {}, [], 0
    while i < len(argv) and argv[i].startswith("-"):
        word = argv[i]
        if word in VALUE:
            if word == "--section":
                sections.extend(filter(None, argv[i + 1].split(",")))
            else:
                options[word.lstrip("-")[:1] if len(word) == 2 else word.lstrip("-")] = argv[i + 1]
            i += 2
        else:
            options[word.lstrip("-")] = True
            i += 1
    return options, sections, argv[i:]


def launches(options):
    spec = os.environ.get("IXKN_STANDIN_KERNELS", "")
    names = []
    for item in filter(None, spec.split(",")):
        name, _, count = item.partition("*")
        names += [name] * int(count or 1)
    wanted = options.get("k") or options.get("kernel-name")
    if wanted:
        names = [n for n in names if n == wanted]
    skip = int(options.get("s") or options.get("launch-skip") or 0)
    count = options.get("c") or options.get("launch-count")
    names = names[skip:]
    return names[:int(count)] if count else names


def csv_text(names, pid, sections):
    lines = [HEADER]
    first = set()
    for k, name in enumerate(names, start=1):
        lead = f'"{k}","{pid}","python "{os.path.basename(sys.executable)}"","{name}","1","7"'
        if name not in first:
            first.add(name)
            lines.append(f'{lead},"Launch Statistics","INF","Block size is a multiple of 64, good"')
            lines.append(f'{lead},"Occupancy","WRN","Achieved occupancy, {10 * k}%, is below theoretical"')
        for section in sections:
            for metric, value in METRICS[section]:
                lines.append(f'{lead},"{section}","{metric}","{value(k)}"')
        if k == 2:
            lines.append(f'"{k}","{pid}",broken line')
    return "\n".join(lines) + "\n"


def report_path(base):
    return base if base.endswith(".ixkn-rep") else base + ".ixkn-rep"


def import_report(options):
    with open(options.get("i") or options["import-profile"]) as handle:
        text = handle.read()
    if options.get("csv"):
        sys.stdout.write(text)
    return 0


def display_sections(identifiers):
    """The display names of `identifiers`; None (after saying why) when one is not an identifier."""
    if "all" in identifiers:
        return list(METRICS)
    unknown = [s for s in identifiers if s not in IDENTIFIERS]
    if unknown:
        print(f"==ERROR== unknown section identifier(s) {', '.join(unknown)}; valid: {', '.join(IDENTIFIERS)}, all",
              file=sys.stderr)
        return None
    return [IDENTIFIERS[s] for s in identifiers]


def run_app(app):
    import shutil

    program = shutil.which(app[0]) or app[0]
    child = subprocess.Popen([os.path.realpath(program), *app[1:]])
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda s, f: child.send_signal(s))
    code = child.wait()
    return child.pid, (128 - code if code < 0 else code)


def main(argv):
    options, sections, app = parse(argv)
    importing = options.get("i") or options.get("import-profile")
    if importing and app:
        print("==ERROR== input is either an application or --import-profile, not both", file=sys.stderr)
        return 1
    if importing:
        return import_report(options)
    if not app:
        print("==ERROR== no application", file=sys.stderr)
        return 1
    export = options.get("o") or options.get("export-profile")
    if export and os.path.exists(report_path(export)) and not options.get("f"):
        print(f"==ERROR== {report_path(export)} exists; use -f to overwrite", file=sys.stderr)
        return 1
    shown = display_sections(sections) if sections else ["Launch Statistics", "Occupancy"]
    if shown is None:
        return 1
    pid, code = run_app(app)
    text = csv_text(launches(options), pid, shown)
    if export:
        with open(report_path(export), "w") as out:
            out.write(text)
    if options.get("csv") and not export:
        sys.stdout.write(text)
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
