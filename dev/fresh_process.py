"""Runs a probe script in a fresh process of its own (GPU machine probes: a first CUDA context,
a first CUPTI client). Shared by the dev/ probes that compare first-launch behaviour."""
import os
import subprocess
import sys


def run_script(script, args, timeout=150):
    """The last line `script` printed (or the tail of its stderr), run from a file beside args[0]
    (Triton's @jit needs its source file)."""
    path = os.path.join(os.path.dirname(args[0]), "probe_%d.py" % (hash(script) & 0xFFFF))
    with open(path, "w") as f:
        f.write(script)
    done = subprocess.run([sys.executable, path, *args], capture_output=True, text=True, timeout=timeout)
    return (done.stdout.strip().splitlines() or [done.stderr[-400:]])[-1]
