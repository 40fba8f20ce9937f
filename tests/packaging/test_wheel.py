"""The wheel a package index would serve, as packaging/build_wheels.sh leaves it in dist/: its tag
(manylinux, abi3 where Python allows), what auditwheel and twine say of it, its metadata, and a
bare virtual environment with no compiler on PATH that installs it and profiles the example.

The wheel tested is the one this test run's flagtree-profiler was installed from (pip records it
in direct_url.json), or FLAGTREE_PROFILER_WHEEL: the test command builds it once and installs it,
so nothing here compiles the native core again."""
import glob
import importlib
import json
import os
import site
import subprocess
import sys
import sysconfig
import zipfile
from email.parser import Parser
from importlib import metadata
from urllib.parse import unquote, urlparse

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPILERS = ("cc", "gcc", "c++", "g++", "clang", "clang++", "zig")


def installed_wheel():
    """The wheel file the installed distribution came from, or None."""
    try:
        text = metadata.distribution("flagtree-profiler").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    url = urlparse(json.loads(text)["url"]) if text else None
    path = unquote(url.path) if url and url.scheme == "file" else ""
    return path if path.endswith(".whl") and os.path.isfile(path) else None


def missing(why):
    """CI must run every check here (the test command builds and installs the wheel): a skip
    elsewhere, a failure there."""
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def find_wheel():
    path = os.environ.get("FLAGTREE_PROFILER_WHEEL") or installed_wheel()
    if path:
        return os.path.abspath(path)
    missing("no built wheel: flagtree-profiler was not installed from one and FLAGTREE_PROFILER_WHEEL is "
            "unset (bash packaging/build_wheels.sh --install test builds and installs one)")


def need(module):
    try:
        return importlib.import_module(module)
    except ImportError:
        missing(f"{module} is missing: the test extra installs it (pip install '<wheel>[test]')")


@pytest.fixture(scope="module")
def wheel():
    return find_wheel()


def tags(wheel):
    """(python, abi, platforms) from the file name: name-version-python-abi-platform.whl."""
    python, abi, platform = os.path.basename(wheel)[:-len(".whl")].split("-")[-3:]
    return python, abi, platform.split(".")


def tool(module, *args):
    need(module)
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=300)


def test_the_wheel_is_manylinux_and_abi3_from_python_3_12(wheel):
    python, abi, platforms = tags(wheel)
    assert "manylinux_2_17_x86_64" in platforms, platforms
    assert not [p for p in platforms if p.startswith("linux_")], platforms
    with zipfile.ZipFile(wheel) as archive:
        modules = [n for n in archive.namelist() if n.startswith("flagtree/profiler/_native")]
    assert len(modules) == 1, modules
    here = f"cp{sys.version_info.major}{sys.version_info.minor}"
    if sys.version_info >= (3, 12):  # one wheel for 3.12 and later, its module named for it
        assert (python, abi) == ("cp312", "abi3") and modules[0].endswith(".abi3.so"), (python, abi, modules)
    else:
        assert (python, abi) == (here, here), (python, abi)
        assert modules[0].endswith(sysconfig.get_config_var("EXT_SUFFIX")), modules


def test_auditwheel_names_the_manylinux_tag_and_nothing_to_graft(wheel):
    shown = tool("auditwheel", "show", wheel)
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert 'consistent with the following platform tag: "manylinux_2_17_x86_64"' in text, shown.stdout
    # CUPTI and the vendor libraries are dlopen'd, the C++ runtime is linked in: the module needs
    # only the C library's own (libc, libm, libdl, libpthread), so there is nothing to graft.
    assert "external shared libraries are required" not in text, shown.stdout
    for library in ("libstdc++", "libgcc_s", "libcupti", "libcuda"):
        assert library not in text, shown.stdout


def test_the_module_needs_no_symbol_newer_than_its_tag(wheel, tmp_path):
    """Every undefined symbol is Python's own or versioned by glibc 2.17 or older: an unversioned
    one from the C library would mean a function the tag's systems may lack."""
    elffile = need("elftools.elf.elffile")  # pyelftools, which auditwheel brings
    with zipfile.ZipFile(wheel) as archive:
        name, = [n for n in archive.namelist() if n.startswith("flagtree/profiler/_native")]
        module = archive.extract(name, tmp_path)
    with open(module, "rb") as f:
        elf = elffile.ELFFile(f)
        symbols = elf.get_section_by_name(".dynsym")
        versions = elf.get_section_by_name(".gnu.version")
        needs = {}
        for section in elf.iter_sections():
            if section.name == ".gnu.version_r":
                for _, aux in section.iter_versions():
                    for entry in aux:
                        needs[entry["vna_other"]] = entry.name
        loose, newest = [], (0, 0)
        for index, symbol in enumerate(symbols.iter_symbols()):
            if symbol.name and symbol["st_shndx"] == "SHN_UNDEF":
                version = needs.get(versions.get_symbol(index)["ndx"]) if versions else None
                if version and version.startswith("GLIBC_"):
                    newest = max(newest, tuple(int(p) for p in version[6:].split(".")[:2]))
                elif not version and not symbol.name.startswith(("Py", "_Py")) and symbol["st_info"]["bind"] != "STB_WEAK":
                    loose.append(symbol.name)
    assert loose == []
    assert (2, 0) < newest <= (2, 17), newest


def test_twine_accepts_the_wheel_and_the_sdist_beside_it(wheel):
    sdists = glob.glob(os.path.join(os.path.dirname(wheel), "flagtree_profiler-*.tar.gz"))
    checked = tool("twine", "check", "--strict", wheel, *sdists)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 1 + len(sdists), checked.stdout


def test_the_metadata_has_classifiers_urls_license_and_readme(wheel):
    with zipfile.ZipFile(wheel) as archive:
        name, = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        fields = Parser().parsestr(archive.read(name).decode())
        licenses = [n for n in archive.namelist() if n.endswith("/LICENSE") and ".dist-info/" in n]
    assert "License :: OSI Approved :: MIT License" in fields.get_all("Classifier")
    assert "Programming Language :: Python :: 3.12" in fields.get_all("Classifier")
    assert {url.split(",")[0] for url in fields.get_all("Project-URL")} >= {"Homepage", "Source", "Issues"}
    assert fields["Requires-Python"] == ">=3.10" and fields["Description-Content-Type"] == "text/markdown"
    assert fields.get_payload().startswith("# FlagTree Profiler")
    assert licenses and fields["License"] == "MIT"


def outer_site_dirs():
    """Where this interpreter finds torch and triton: the bare venv borrows them from here."""
    dirs = site.getsitepackages() + [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(os.path.join(d, "torch"))]


def test_a_bare_venv_installs_the_wheel_without_a_compiler_and_profiles_the_example(wheel, tmp_path):
    for module in ("torch", "triton"):  # the example runs Triton kernels
        need(module)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    bindir = str(venv / "bin")
    env = {"PATH": bindir, "HOME": str(tmp_path), "TRITON_CACHE_DIR": str(tmp_path / "triton")}

    def run(*args, cwd=tmp_path):
        return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)

    python = os.path.join(bindir, "python")
    no_compiler = run(python, "-c", f"import shutil; print([c for c in {COMPILERS!r} if shutil.which(c)])")
    assert no_compiler.returncode == 0 and no_compiler.stdout.strip() == "[]", no_compiler.stdout + no_compiler.stderr
    # This interpreter's pip installs into the venv; --no-index and --only-binary: no source, no build.
    installed = run(sys.executable, "-m", "pip", "--python", python, "install", "--no-index", "--no-deps",
                    "--only-binary", ":all:", "--disable-pip-version-check", "--no-cache-dir", wheel)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    venv_site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip()
    # torch and triton come from this interpreter's site-packages, after the venv's own.
    with open(os.path.join(venv_site, "outer_site.pth"), "w") as f:
        f.write("\n".join(outer_site_dirs()) + "\n")
    where = run(python, "-c", "import flagtree.profiler as p, flagtree.profiler._native as n; print(p.__file__); "
                              "print(n.__file__)")
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(venv_site) for line in where.stdout.split()), where.stdout

    profiled = run(os.path.join(bindir, "flagtree-profiler"), "-b", "interpreter", "-n", "vector_add",
                   os.path.join(ROOT, "examples", "vector_add.py"))
    assert profiled.returncode == 0, profiled.stderr
    assert "flagtree-profiler: wrote" in profiled.stderr, profiled.stderr
    with open(tmp_path / "vector_add.hatchet") as f:
        stack, counts = [json.load(f)[0]], {}
    while stack:
        node = stack.pop()
        stack.extend(node["children"])
        if node["frame"].get("kind") == "kernel":
            counts[node["frame"]["name"]] = counts.get(node["frame"]["name"], 0) + node["metrics"]["count"]
    assert counts == {"add_kernel": 3, "scale_kernel": 3}, counts
    viewed = run(os.path.join(bindir, "flagtree-profiler-viewer"), "-m", "time/ms,count", "vector_add.hatchet")
    assert viewed.returncode == 0 and "add_kernel" in viewed.stdout, viewed.stdout + viewed.stderr
