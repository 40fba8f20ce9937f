"""The docs stay true: the environment table, the README's commands, and CI running its test command."""
import os
import re

from flagtree.profiler import _env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def test_environment_table_matches_the_code():
    table = read("docs", "reference", "environment.md")
    rows = dict(re.findall(r"^\| `(FLAGTREE_PROFILER_\w+)` \| (.+?) \|$", table, re.M))
    assert rows == _env.ENVIRONMENT


def test_readme_has_the_two_setup_commands_and_ci_runs_the_second():
    readme = read("README.md")
    main_cmd = re.search(r"# 1\. .*\n(.+)\n", readme).group(1)
    test_cmd = re.search(r"# 2\. run the tests\n(.+)\n", readme).group(1)
    assert "flagtree-profiler examples/vector_add.py" in main_cmd and "flagtree-profiler-viewer" in main_cmd
    assert "pytest" in test_cmd
    ci_lines = [line.strip() for line in read(".ci", "run").splitlines()]
    assert test_cmd.strip() in ci_lines, "CI must run the README's test command as written"


def test_every_public_name_is_documented():
    """Each public name is written as code (`name`, `name(...)`) in the README or a reference
    page: the whole name, not a prefix of another word (`read` is not `reader.py`)."""
    import flagtree.profiler as profiler

    reference = os.path.join(ROOT, "docs", "reference")
    pages = sorted(os.listdir(reference)) if os.path.isdir(reference) else []
    docs = read("README.md") + "".join(read("docs", "reference", p) for p in pages if p.endswith(".md"))
    for name in profiler.__all__:
        if name != "KNOWN_BACKENDS":
            assert re.search(r"`(?:[\w.]+\.)?" + re.escape(name) + r"\b", docs), name


def test_readme_stays_short_and_its_links_resolve():
    readme = read("README.md")
    assert len(readme.splitlines()) <= 220
    for target in re.findall(r"\]\(([^)\s#,]+)(?:#[^)\s]*)?\)", readme):
        if "://" not in target:
            assert os.path.exists(os.path.join(ROOT, target)), target


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


def test_architecture_names_only_paths_that_exist():
    """docs/ARCHITECTURE.md's file and folder names (in backquotes) are real paths under csrc/,
    src/flagtree/profiler/ or the repository root."""
    text = read("docs", "ARCHITECTURE.md")
    roots = ["", "csrc", os.path.join("src", "flagtree", "profiler")]
    names = set(re.findall(r"`([\w./-]+(?:\.(?:py|h|cpp|md)|/))`", text))
    assert len(names) > 40
    missing = []
    for name in names:
        if "<" in name or not any(os.path.exists(os.path.join(ROOT, root, name)) for root in roots):
            # a bare file name stands in the folder its bullet names: look for it anywhere
            found = any(name.rstrip("/") in files or name.rstrip("/") in dirs
                        for _, dirs, files in os.walk(os.path.join(ROOT, "csrc")))
            found = found or any(name.rstrip("/") in files or name.rstrip("/") in dirs
                                 for _, dirs, files in os.walk(os.path.join(ROOT, "src")))
            if not found:
                missing.append(name)
    assert not missing, missing
