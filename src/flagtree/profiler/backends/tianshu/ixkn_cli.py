"""``flagtree-profiler --ixkn [--ixkn-* options] script.py ...``: the target under Iluvatar's
kernel profiler ixkn-cli, from startup (ixKN replays kernels, so it must own the process), with
the profiler's own session (backend tianshu) inside the child; afterwards ixKN's CSV goes into the
profile's kernel nodes (ixkn_import.py) and ``<name>.vendor.json``.

The child is ``ixkn-cli <ixkn options> --export-profile <name> -f [--csv] python -m
flagtree.profiler.cli <the same options> -b tianshu -m ...:launch_log=on <target>``. The CSV is
taken from the child's stdout from the line starting with "Kernel ID" (what comes before is the
target's output and is passed through); when there is none (ixkn-cli prints nothing once it
saves a report), the saved report is re-imported with ``ixkn-cli -i <report> --csv``.
Exit status, Ctrl-C and SIGTERM as the plain command: the child's status (128+N when a signal
N ended it); SIGINT/SIGTERM reaching this process are passed on to the child, which writes its
profile; the import then still runs.
"""
import json
import os
import shutil
import signal
import site
import subprocess
import sys
import threading
import time

from ... import _env
from ...paths import IXKN_REPORT, output_paths, profile_file, side_file
from ...writers.atomic import write_json, write_text

# The extension of `flagtree-profiler` (cli/extension.py says what each name is).
OPTION = "--ixkn"
NEEDS_TARGET = True
VALUE_OPTIONS = frozenset({"--ixkn-cli", "--ixkn-devices", "--ixkn-section", "--ixkn-kernel-name",
                           "--ixkn-launch-count", "--ixkn-launch-skip", "--ixkn-export-profile"})


def add_options(parser):
    group = parser.add_argument_group("Iluvatar ixKN (backend tianshu)")
    group.add_argument("--ixkn", action="store_true", help="run the target under ixkn-cli from startup and import "
                       "its per-kernel metrics into the profile (NAME.vendor.json)")
    group.add_argument("--ixkn-cli", help="ixkn-cli to run (default: $FLAGTREE_PROFILER_IXKN_CLI, $IXKN_CLI, PATH)")
    group.add_argument("--ixkn-devices", help="ixkn-cli --devices")
    group.add_argument("--ixkn-section", action="append", help="ixkn-cli --section: section identifiers "
                       "(LaunchStats, Occupancy, Instruction, Memory, all; `ixkn-cli --list-sections` lists them), "
                       "comma-separated or repeated, passed as one value (known display names are translated); "
                       "default: the sections of -m vendor_metrics=..., else ixKN's own")
    group.add_argument("--ixkn-kernel-name", help="ixkn-cli --kernel-name")
    group.add_argument("--ixkn-launch-count", type=int, help="ixkn-cli --launch-count")
    group.add_argument("--ixkn-launch-skip", type=int, help="ixkn-cli --launch-skip")
    group.add_argument("--ixkn-export-profile", help="report path (default: NAME; ixKN adds .ixkn-rep)")
    group.add_argument("--no-ixkn-csv", action="store_true", help="do not ask for CSV on stdout; read the report")
    group.add_argument("--ixkn-profile-child-processes", action="store_true", help="ixkn-cli --profile-child-processes")


def _given(options):
    return [f"--{k.replace('_', '-')}" for k, v in vars(options).items()
            if k.startswith(("ixkn_", "no_ixkn")) and v not in (None, False)]


def requested(options):
    """Whether the command line is an --ixkn one (or names --ixkn-* options, an error without it)."""
    return bool(options.ixkn or _given(options))


def main(invocation):
    """The --ixkn command (an extension.Invocation); returns the exit status."""
    options = invocation.options
    problem = usage_problem(options)
    if problem:
        invocation.say(f"error: {problem}")
        return 2
    return run(options, invocation.kind, invocation.target, invocation.args, invocation.name, invocation.say)


def usage_problem(options):
    """A sentence saying why the options make no sense together, or None."""
    given = _given(options)
    if not options.ixkn:
        return f"{', '.join(given)} needs --ixkn" if given else None
    if options.backend and options.backend != "tianshu":
        return f"--ixkn profiles with backend tianshu; it cannot run with --backend {options.backend}"
    for name in ("ixkn_launch_count", "ixkn_launch_skip"):
        value = getattr(options, name)
        if value is not None and value < (1 if name == "ixkn_launch_count" else 0):
            return f"--{name.replace('_', '-')} must be {'at least 1' if name == 'ixkn_launch_count' else '>= 0'}"
    return None


def find_cli(options):
    path = options.ixkn_cli or _env.ixkn_cli()
    if path and (os.path.isfile(path) or shutil.which(path)):
        return shutil.which(path) or path
    where = f"{path!r} does not exist" if path else ("not found via --ixkn-cli, FLAGTREE_PROFILER_IXKN_CLI, "
                                                     "IXKN_CLI or the PATH")
    raise FileNotFoundError(f"--ixkn: ixkn-cli {where}")


# --- the child command ------------------------------------------------------------------------

def _ixkn_arguments(options, report):
    from .ixkn_import import section_value  # deferred: the import layer loads for --ixkn runs only

    args = []
    if options.ixkn_devices:
        args += ["--devices", options.ixkn_devices]
    sections = section_value(_metrics(options), options.ixkn_section or ())
    if sections:  # ixkn-cli takes one comma-separated list of section identifiers
        args += ["--section", sections]
    if options.ixkn_kernel_name:
        args += ["--kernel-name", options.ixkn_kernel_name]
    if options.ixkn_launch_count is not None:
        args += ["--launch-count", str(options.ixkn_launch_count)]
    if options.ixkn_launch_skip is not None:
        args += ["--launch-skip", str(options.ixkn_launch_skip)]
    if options.ixkn_profile_child_processes:
        args.append("--profile-child-processes")
    args += ["--export-profile", report, "-f"]
    if not options.no_ixkn_csv:
        args.append("--csv")
    return args


def _metrics(options):
    from .backend import parse_mode  # deferred: the tianshu backend loads for --ixkn runs only

    return parse_mode(options.mode).vendor_metrics


def _child_mode(options):
    return ":".join(filter(None, [options.mode, "launch_log=on"]))


def _profiler_arguments(options, name, kind, target, args):
    own = ["-n", name, "-b", "tianshu", "-c", options.context, "-d", options.data, "-m", _child_mode(options)]
    if options.hook:
        own += ["-k", options.hook]
    if kind == "module":
        return own + ["--module", target, *args]
    if kind == "pytest":
        return own + ["pytest", *args]
    return own + ["--", target, *args]


# --- running it ---------------------------------------------------------------------------------

class _Capture:
    """Passes the child's stdout through until the CSV header, and keeps the CSV from there on."""

    def __init__(self, stream):
        self.csv_lines = []
        self._stream = stream
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()

    def _pump(self):
        out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
        for line in iter(self._stream.readline, b""):
            if self.csv_lines or line.lstrip().lstrip(b'"').startswith(b"Kernel ID"):
                self.csv_lines.append(line.decode("utf-8", "replace"))
            elif out is not None:
                out.write(line)
                out.flush()
            else:
                sys.stdout.write(line.decode("utf-8", "replace"))

    def text(self):
        self.thread.join()
        return "".join(self.csv_lines) or None


def _child_environment():
    """This process's environment, with its site-packages folders (and the folders their .pth
    files added) put on the child's PYTHONPATH: ixkn-cli resolves the interpreter's symlinks, so
    a virtualenv's python runs as the base interpreter and would lose the venv's packages."""
    env = dict(os.environ)
    own = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    site_dirs = [os.path.realpath(d) for d in site.getsitepackages() + [site.getusersitepackages()]]
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    for entry in sys.path[1:]:  # [0] is this command's own folder, not the target's
        if not entry or entry in own or not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        in_site = any(real == d or real.startswith(d + os.sep) for d in site_dirs)
        if in_site or "site-packages" in real or "dist-packages" in real or not real.startswith(stdlib):
            own.append(entry)
    if own:
        env["PYTHONPATH"] = os.pathsep.join(own)
    return env


def _run_child(command):
    """Runs `command`, passing SIGINT/SIGTERM on; returns its exit status as the plain CLI would.
    The child has its own process group, so a Ctrl-C at the terminal reaches it once, through
    this process and ixkn-cli, rather than a second time directly (which could interrupt the
    child while it writes its profile)."""
    own_group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
    child = subprocess.Popen(command, stdout=subprocess.PIPE, env=_child_environment(), **own_group)
    capture = _Capture(child.stdout)
    previous = {}

    def forward(signum, frame):
        try:
            child.send_signal(signum)
        except OSError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, forward)
        except ValueError:  # not the main thread
            pass
    try:
        code = child.wait()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    csv_text = capture.text()
    return (128 - code if code < 0 else code), csv_text


def run(options, kind, target, args, name, say):
    """The --ixkn command; returns the exit status."""
    try:
        cli = find_cli(options)
        _metrics(options)  # a bad mode is a usage error before anything runs
    except (FileNotFoundError, ValueError) as error:
        say(f"error: {error}")
        return 2
    report = options.ixkn_export_profile or name
    _forget(side_file(name, "launch_log"))  # a previous run's log must not be matched to this run's rows
    started = time.time()
    command = [cli, *_ixkn_arguments(options, report), sys.executable, "-m", "flagtree.profiler.cli",
               *_profiler_arguments(options, name, kind, target, args)]
    try:
        code, csv_text = _run_child(command)
    except OSError as error:
        say(f"error: cannot run {cli}: {error}")
        return 2
    try:
        say(_import(options, cli, name, report, csv_text, started))
    except Exception as error:  # the profile the child wrote stays; say what failed
        say(f"error: ixKN import failed: {error}")
        return code or 1
    return code


def _forget(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fresh(path, started):
    """Whether `path` exists and was written by this run (not left by an earlier one)."""
    try:
        return os.path.getmtime(path) >= started - 1  # coarse file-system timestamps
    except OSError:
        return False


def _report_file(report, started):
    for path in (report, report + IXKN_REPORT):
        if _fresh(path, started):
            return path
    return None


def _import(options, cli, name, report, csv_text, started):
    from ...vendor_import import attach_to_hatchet, attach_to_trace  # deferred: the import layer loads for --ixkn runs only
    from . import ixkn_import  # deferred: the import layer loads for --ixkn runs only

    reasons, raw_inputs = [], []
    saved = _report_file(report, started)
    if csv_text is None:
        if saved is None:
            raise RuntimeError(f"ixkn-cli printed no CSV and wrote no report {report}{IXKN_REPORT}")
        csv_text = ixkn_import.report_csv(cli, saved)
        raw_inputs.append(saved)
    else:
        raw_inputs.append(_keep_csv(name, csv_text))
    launches, pid, data = _child_launches(name, reasons)
    offsets = _ordinal_offsets(options, reasons)
    parsed, result = ixkn_import.import_csv(csv_text, launches, pid=pid, ordinal_offsets=offsets)
    output = profile_file(name, data)
    if _fresh(output, started):
        missing = (attach_to_hatchet if data == "tree" else attach_to_trace)(output, result)
        if missing:
            reasons.append(f"{missing} matched launches have no node in {output}")
    else:
        reasons.append(f"{output} was not written (periodic parts, or the target died); metrics only in vendor.json")
    vendor_json = side_file(name, "vendor")
    counts = ixkn_import.write_vendor_json(vendor_json, parsed, result, launches,
                                           requested=_metrics(options), raw_inputs=raw_inputs, degrade_reasons=reasons)
    _update_metadata(output_paths(name, data).metadata, counts)
    return (f"ixKN: {counts['vendor_rows_matched']} of {counts['vendor_rows']} kernel launches matched, "
            f"{counts['vendor_rows_unmatched']} unmatched (kept under <unmatched vendor rows>), "
            f"{len(parsed.messages)} messages; wrote {vendor_json}")


def _keep_csv(name, text):
    path = side_file(name, "ixkn_csv")
    write_text(path, text)
    return path


def _child_launches(name, reasons):
    from ...vendor_import import launches_from_log  # deferred: the import layer loads for --ixkn runs only

    path = side_file(name, "launch_log")
    try:
        with open(path) as handle:
            log = json.load(handle)
    except (OSError, ValueError) as error:
        reasons.append(f"no launch log from the profiled process ({path}: {error}); every row is unmatched")
        return [], None, "tree"
    return launches_from_log(log["columns"]), log.get("pid"), log.get("data", "tree")


def _ordinal_offsets(options, reasons):
    skip = options.ixkn_launch_skip
    if not skip:
        return None
    if options.ixkn_kernel_name and not options.ixkn_kernel_name.startswith("regex:"):
        return {options.ixkn_kernel_name: skip}
    reasons.append("--ixkn-launch-skip without a plain --ixkn-kernel-name: ixKN's skip counts all kernels, so "
                   "launch order within a name may be shifted")
    return None


def _update_metadata(path, counts):

    try:
        with open(path) as handle:
            metadata = json.load(handle)
    except (OSError, ValueError):
        return
    metadata.update(counts)
    write_json(path, metadata, indent=1, sort_keys=True)
