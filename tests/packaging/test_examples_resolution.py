"""The README's CPU install route resolves a CPU torch: `pip install ".[examples]"` with PyTorch's
CPU index as an extra index, resolved dry (nothing is downloaded beyond metadata or installed),
ignoring this machine's pip configuration (its local wheels would hide what a plain index gives).
Needs the two indexes; where they cannot be reached, or on a machine with an NVIDIA driver (where
the CUDA build is the right one), it skips and says so."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYPI, CPU_INDEX = "https://pypi.org/simple", "https://download.pytorch.org/whl/cpu"


def examples_requirements():
    """The `examples` extra as pyproject.toml lists it."""
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    line = re.search(r"^examples\s*=\s*\[(.*)\]\s*$", text, re.M).group(1)
    return re.findall(r'"([^"]+)"', line)


def reachable(host):
    try:
        socket.create_connection((host, 443), timeout=5).close()
        return True
    except OSError:
        return False


def test_readme_names_the_cpu_index_it_resolves_with():
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert f'pip install ".[examples]" --extra-index-url {CPU_INDEX}' in readme
    assert examples_requirements() and any(r.startswith("torch") for r in examples_requirements())


def test_examples_resolve_to_cpu_torch_without_cuda_wheels(tmp_path):
    if shutil.which("nvidia-smi"):
        pytest.skip("an NVIDIA driver is present: the CUDA build of torch is the one to take here")
    for host in ("pypi.org", "download.pytorch.org"):
        if not reachable(host):
            pytest.skip(f"{host} cannot be reached from this machine: the resolution needs both indexes")
    report = tmp_path / "resolution.json"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed",
                           "--quiet", "--report", str(report), "--index-url", PYPI, "--extra-index-url", CPU_INDEX,
                           *examples_requirements()], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    chosen = {item["metadata"]["name"].lower(): item["metadata"]["version"]
              for item in json.loads(report.read_text())["install"]}
    assert chosen["torch"].endswith("+cpu"), chosen
    assert not [name for name in chosen if name.startswith("nvidia-")], chosen
