"""``flagtree-profiler --list-metrics [--chip GH100] [--submetrics]``: the nvidia backend's
extension of the command (cli/extension.py): prints the hardware metrics usable in
``-m metrics=<list>``, one per line, `name<TAB>type<TAB>unit<TAB>description`, and exits."""
from ..base import BackendUnavailable
from ...native_core import native

OPTION = "--list-metrics"
VALUE_OPTIONS = frozenset({"--chip"})
NEEDS_TARGET = False


def add_options(parser):
    group = parser.add_argument_group("NVIDIA hardware counters (backend nvidia)")
    group.add_argument("--list-metrics", action="store_true",
                       help="print the hardware metrics usable in -m metrics=<list> (nvidia) and exit")
    group.add_argument("--chip", help="with --list-metrics: the chip, e.g. GH100 (default: GPU 0's)")
    group.add_argument("--submetrics", action="store_true",
                       help="with --list-metrics: print every full name (base metric + submetric)")


def requested(options):
    return bool(options.list_metrics)


def main(invocation):
    """Prints the metrics; 2 after saying why they could not be listed."""
    from .counters import list_metrics  # deferred: CUPTI's metric tables load only for this listing

    options = invocation.options
    try:
        metrics = list_metrics(chip=options.chip, submetrics=options.submetrics)
    except (RuntimeError, ValueError, BackendUnavailable) as error:
        invocation.say(f"error: {invocation.message(error)}{_hint(options)}")
        return 2
    for m in metrics:
        for name in (m.get("submetrics") if options.submetrics else None) or [m["name"]]:
            print("\t".join(invocation.escape(str(v)) for v in (name, m["type"], m["unit"], m["description"])))
    return 0


def _hint(options):
    if native.nvidia.cuda_driver_version():
        return ""
    return ("; listing metrics needs the CUDA driver (libcuda.so.1), which this machine lacks: CUPTI's "
            "metric tables cannot be read offline here" + (", even for a named chip" if options.chip else ""))
