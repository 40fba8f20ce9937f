"""GPU probe: can another CUPTI client attach in the same process after ours, and ours after it?
One line per variant: worked / the error. The orders and the child process that runs them are
tests/gpu/handover.py's (tests/gpu/test_handover_gpu.py runs the same orders).

    python dev/probe_handover.py            # every order, with the default libcupti and with Triton's
    python dev/probe_handover.py --list     # the variant names
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "gpu"))
from handover import run_order, variants  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    for label, steps, path in variants():
        if args.list:
            print(label)
            continue
        worked, text = run_order(steps, path)
        print(f"{label}: {text}", flush=True)


if __name__ == "__main__":
    main()
