"""What a fresh install gets: a LICENSE in the repository, the wheel and the sdist; the developer
scripts (dev/) kept out of the sdist; nothing left pointing at the old tools/ folder."""
import os
import subprocess
import sys
import tarfile

import pytest

from test_docs import ROOT, read


def test_license_is_the_declared_mit_and_goes_into_wheel_and_sdist():
    assert read("LICENSE").startswith("MIT License\n")
    pyproject = read("pyproject.toml")
    assert 'license = { text = "MIT" }' in pyproject
    assert 'wheel.license-files = ["LICENSE"]' in pyproject
    assert 'sdist.exclude = ["dev/"]' in pyproject


def test_sdist_has_the_license_and_not_the_developer_scripts(tmp_path):
    pytest.importorskip("scikit_build_core", reason="scikit-build-core (the build backend) packs the sdist")
    script = f"from scikit_build_core.build import build_sdist; print(build_sdist({str(tmp_path)!r}))"
    built = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    with tarfile.open(tmp_path / built.stdout.strip().splitlines()[-1]) as sdist:
        names = [name.split("/", 1)[1] for name in sdist.getnames() if "/" in name]
    assert "LICENSE" in names and "src/flagtree/profiler/__main__.py" in names
    assert not [n for n in names if n.startswith(("dev/", "tools/"))]


def test_nothing_refers_to_the_old_tools_folder():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    for path in tracked:
        if path.startswith("bench/results/") or not path.endswith((".py", ".sh", ".md", ".toml", "run")):
            continue
        with open(os.path.join(ROOT, path), errors="replace") as f:
            text = f.read()
        old = ("tools" + "/gpu_round", "tools" + "/probe_")  # spelt apart so this file does not match
        assert not any(o in text for o in old), path


def test_reference_documents_module_parts_and_metadata_names():
    readme = "".join(read("docs", "reference", page) for page in ("command-line.md", "outputs.md", "api.md", "viewer.md"))
    for phrase in ("--module package.module", "python -m flagtree.profiler [options]", "<name>.part1.hatchet",
                   "flagtree-profiler-viewer name.part*.hatchet", "<name>.<ext>.meta.json", "--keep-pytest-frames"):
        assert phrase in readme, phrase
