"""What a schedule's known-quiet suspend saves on the nvidia backend: bench/serving_loop.py's model
under schedule(wait=--wait, active=20) for --cycles cycles a block, step() every step, blocks
interleaved none, known, none, unknown, ... over --rounds rounds. "known": the rule as shipped (a
quiet stretch known to be long lets CUPTI go when it begins); "unknown": the rule off
(cupti_attach.MIN_KNOWN_QUIET_S infinite), so CUPTI stays attached and quiet until the idle clock
(FLAGTREE_PROFILER_CUPTI_IDLE_S, 10 s); "custom": the rule with the bounds given (QUIET_LEADS,
MIN_KNOWN_QUIET_S, LEAD_ATTACHES from --quiet-leads, --min-known, --lead-attaches). The first
quiet stretch of a block is measured, not known, in all. Prints each configuration's median ratio
to its neighbouring none blocks, its microseconds a step and its suspensions a block."""
import argparse
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import serving_blocks  # noqa: E402
import serving_loop  # noqa: E402
from flagtree.profiler.backends.nvidia import cupti_attach  # noqa: E402

profiler, native = serving_loop.profiler, serving_loop._native
ACTIVE = 20
SHIPPED = (cupti_attach.QUIET_LEADS, cupti_attach.MIN_KNOWN_QUIET_S, cupti_attach.LEAD_ATTACHES)
RULES = {}


def set_rule(leads, least, lead):
    cupti_attach.QUIET_LEADS, cupti_attach.MIN_KNOWN_QUIET_S, cupti_attach.LEAD_ATTACHES = leads, least, lead


def rules(args):
    RULES["known"] = lambda: set_rule(*SHIPPED)
    RULES["unknown"] = lambda: set_rule(SHIPPED[0], math.inf, SHIPPED[2])
    RULES["custom"] = lambda: set_rule(args.quiet_leads, args.min_known, args.lead_attaches)


def block(config, model, wait, cycles, folder):
    """Seconds a step and the suspensions of one block."""
    steps = cycles * (wait + ACTIVE)
    if config == "none":
        return serving_blocks.plain_block(model, steps), 0
    RULES[config]()
    suspensions = native.nvidia.cupti_attach_stats()["suspensions"]
    sid = profiler.start(os.path.join(folder, config), schedule=profiler.schedule(wait=wait, active=ACTIVE))
    began = time.perf_counter()
    for _ in range(steps):
        model()
        profiler.step(sid)
    took = (time.perf_counter() - began) / steps
    profiler.finalize(sid)
    profiler.release()
    return took, native.nvidia.cupti_attach_stats()["suspensions"] - suspensions


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--wait", type=int, default=4980)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hidden", type=int, default=4096, help="the model's width (64 for a CPU dry run)")
    parser.add_argument("--configs", default="known,unknown", help="of known, unknown, custom")
    parser.add_argument("--quiet-leads", type=float, default=SHIPPED[0])
    parser.add_argument("--min-known", type=float, default=SHIPPED[1])
    parser.add_argument("--lead-attaches", type=float, default=SHIPPED[2])
    args = parser.parse_args()
    rules(args)
    configs = tuple(args.configs.split(","))
    model = serving_loop.Model(8, args.hidden, 256)
    order = tuple(x for c in configs for x in ("none", c))
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for config in ("none",) + configs:
            block(config, model, 20, 1, folder)  # warm-up: compiles, CUPTI's first attach
        for _ in range(args.rounds):
            rows += [(c,) + block(c, model, args.wait, args.cycles, folder) for c in order]
        rows.append(("none",) + block("none", model, args.wait, args.cycles, folder))
    serving_blocks.report(rows, configs, "suspensions")

if __name__ == "__main__":
    main()
