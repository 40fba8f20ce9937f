"""Stateful fuzz of the public session API: seeded random sequences (support/api_fuzz_plan.py) of
start (interpreter and tianshu backends, shadow and python contexts, tree/trace/perfetto data,
schedules, hook="triton", several sessions at once), activate/deactivate/finalize/flush_part/step/
profile with open, finalized, unknown and mistyped ids, nested scopes, cpu-timed scopes and states
with odd names and metrics, exceptions inside them, exits out of order, launches (one kernel's
launch_metadata returning odd names and metrics), a second thread, and calls that must fail. After
every op the open sessions, their activity and the scope stack are the model's
(support/api_fuzz_model.py); after every finalize its files are checked (strict JSON, read back by
the viewer's reader, the launches of each part by path, scope metrics, a python session's frames:
support/api_fuzz_written.py); after every sequence no temporary file is left and a fresh session
works. Misuse must raise TypeError, ValueError or RuntimeError with a message. arm() and disarm()
(step ranges, SIGUSR2 with a steps window, bad texts, a second arm(), disarm() twice) mix with all of
it: a window is a session among the others, and at disarm() each window's parts must hold the
launches made while it recorded, its steps and the metadata's windows and part_steps the trigger's
(support/api_fuzz_arm.py). The "disabled" case runs the sequences with FLAGTREE_PROFILER_DISABLE=1:
start() gives -1, arm() None, nothing is written, valid calls never raise.

The sequences run in a child process (support/api_fuzz_run.py), so that a crash or a hang fails the
test naming its seed. FLAGTREE_API_FUZZ_SEQUENCES=N runs N sequences per case (default 80), from
seed FLAGTREE_API_FUZZ_FIRST (default 0): a deeper run for local use.
"""
import os
import subprocess
import sys

import pytest

from support import api_fuzz_plan

SEQUENCES = int(os.environ.get("FLAGTREE_API_FUZZ_SEQUENCES", "80"))
FIRST = int(os.environ.get("FLAGTREE_API_FUZZ_FIRST", "0"))
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Periodic parts: a timer thread cuts parts while the sequence runs (its pause op lets it).
# Disabled: every call a cheap no-op (start() -1, arm() None), nothing written, no error for valid use.
CASES = {"plain": ({}, 0), "periodic parts": ({"FLAGTREE_PROFILER_PERIODIC_S": "0.1"}, 500_000),
         "disabled": ({"FLAGTREE_PROFILER_DISABLE": "1"}, 1_000_000)}


def _last_seed(output):
    begun = [line.split()[1] for line in output.splitlines() if line.startswith("begin ")]
    return int(begun[-1]) if begun else None


def _report(output, first, count, environment, why):
    seed = _last_seed(output)
    variables = "".join(f"{k}={v} " for k, v in environment.items())
    lines = [f"{why}; the sequences ran from seed {first}, {count} of them, in one process",
             f"rerun: cd tests && {variables}TRITON_INTERPRET=1 python -m support.api_fuzz_run {first} {count}"]
    if seed is not None:
        lines.append(f"seed {seed} (alone: python -m support.api_fuzz_run {seed} 1); its sequence:")
        lines.extend(api_fuzz_plan.describe(api_fuzz_plan.plan(seed)))
    lines.append("output (last 6000 characters):\n" + output[-6000:])
    return "\n".join(lines)


@pytest.mark.parametrize("case", sorted(CASES))
def test_random_api_sequences_keep_every_invariant(case):
    environment, offset = CASES[case]
    first = FIRST + offset
    env = dict(os.environ, TRITON_INTERPRET="1", **environment)
    timeout = 120 + 3 * SEQUENCES
    try:
        result = subprocess.run([sys.executable, "-m", "support.api_fuzz_run", str(first), str(SEQUENCES)],
                                cwd=TESTS, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        output = (expired.stdout or b"").decode(errors="replace") if isinstance(expired.stdout, bytes) \
            else expired.stdout or ""
        pytest.fail(_report(output, first, SEQUENCES, environment, f"hung: no end after {timeout} s"))
    output = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(_report(output, first, SEQUENCES, environment, f"exit status {result.returncode}"))
    assert sum(line.startswith("ok ") for line in output.splitlines()) == SEQUENCES, output[-3000:]
