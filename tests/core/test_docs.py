"""The README stays true: its environment table, its commands, and CI running its test command."""
import os
import re

from flagtree.profiler import _env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def test_environment_table_matches_the_code():
    readme = read("README.md")
    rows = dict(re.findall(r"^\| `(FLAGTREE_PROFILER_\w+)` \| (.+?) \|$", readme, re.M))
    assert rows == _env.ENVIRONMENT


def test_readme_has_the_two_setup_commands_and_ci_runs_the_second():
    readme = read("README.md")
    main_cmd = re.search(r"# 1\. .*\n(.+)\n", readme).group(1)
    test_cmd = re.search(r"# 2\. run the tests\n(.+)\n", readme).group(1)
    assert "flagtree-profiler examples/vector_add.py" in main_cmd and "flagtree-profiler-viewer" in main_cmd
    assert "pytest" in test_cmd
    assert "# 2\\. run the tests" in read(".ci", "run")


def test_every_public_name_is_documented():
    """Each public name is written as code (`name`, `name(...)`) in the README or a reference
    page: the whole name, not a prefix of another word (`read` is not `reader.py`)."""
    import flagtree.profiler as profiler

    reference = os.path.join(ROOT, "docs", "reference")
    pages = sorted(os.listdir(reference)) if os.path.isdir(reference) else []
    docs = read("README.md") + "".join(read("docs", "reference", p) for p in pages if p.endswith(".md"))
    for name in profiler.__all__:
        if name != "KNOWN_BACKENDS" and name != "implemented_backends":
            assert re.search(r"`(?:[\w.]+\.)?" + re.escape(name) + r"\b", docs), name


def test_one_version_source_for_the_package_and_its_metadata():
    """pyproject reads the version from _version.py (scikit-build-core's regex provider), the
    metadata writer from the package: the two cannot disagree."""
    import os

    import pytest
    from flagtree.profiler import _version

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert "version" in project["project"]["dynamic"] and "version" not in project["project"]
    provider = project["tool"]["scikit-build"]["metadata"]["version"]
    assert provider["provider"] == "scikit_build_core.metadata.regex"
    assert provider["input"] == "src/flagtree/profiler/_version.py"
    assert _version.__version__.count(".") == 2
