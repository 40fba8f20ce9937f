"""Makes docs/report.png, the picture of the HTML report that the README shows, from a real run.

    PYTHONPATH=src python docs/report_picture.py

A real session (Triton kernels run by the interpreter on the CPU, so no GPU is needed) writes
a profile; `flagtree-profiler-viewer --html` turns it into a report; headless Chromium opens
it, the mouse rests on a kernel (the hover details show its launch metadata), and the page is
captured. Needs `chromium` on PATH.
"""

import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests"), os.path.join(HERE, "..", "tests", "viewer")]
os.environ.setdefault("TRITON_INTERPRET", "1")

import flagtree.profiler as profiler  # noqa: E402
from flagtree.profiler.viewer.cli import main  # noqa: E402
from flame_fixtures import DevTools  # noqa: E402
from support.kernels import launch_add, launch_copy, tensors  # noqa: E402


def record(path):
    x, y, z = tensors(4096)
    profiler.start(path)
    try:
        for layer in range(3):
            with profiler.scope(f"layer{layer}"):
                with profiler.scope("attention"):
                    for _ in range(2 + layer):
                        launch_add(x, y, z)
                with profiler.scope("mlp"):
                    launch_copy(x, z)
                    launch_add(x, y, z, block=128)
        with profiler.scope("optimizer"):
            launch_copy(x, z, block=256)
    finally:
        profiler.finalize()
    return path + ".hatchet"


def picture(out_png):
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if not binary:
        raise SystemExit("needs chromium on PATH")
    home = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # relative names, so the page shows 'training_step.hatchet' as typed
        try:
            hatchet = os.path.basename(record("training_step"))
            if main(["--html", "report.html", "-m", "time/ms,count", hatchet]) != 0:
                raise SystemExit("viewer --html failed")
        finally:
            os.chdir(home)
        browser = DevTools(binary, os.path.join(tmp, "chrome"))
        try:
            browser.open("file://" + os.path.join(tmp, "report.html"))
            browser.call("Emulation.setDeviceMetricsOverride", width=1100, height=960,
                         deviceScaleFactor=1, mobile=False)
            browser.eval("__report.zoom(0)")  # redraw at the new width before asking where things are
            spot = browser.eval("__report.where('copy_kernel', 2)")
            browser.mouse("mouseMoved", spot["x"], spot["y"])
            browser.screenshot(out_png)
        finally:
            browser.close()
    print(f"wrote {out_png} ({os.path.getsize(out_png)} bytes)")


if __name__ == "__main__":
    picture(os.path.join(HERE, "report.png"))
