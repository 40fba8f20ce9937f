"""Shared by the flame-export and HTML-report tests: a profile from a real session, the
speedscope schema (written down from the format's published schema), and Chromium."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

SPEEDSCOPE_UNITS = ["none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"]

# https://www.speedscope.app/file-format-schema.json, the parts this exporter can produce plus
# the evented form, as described in shared/reference/formats.md.
SPEEDSCOPE_SCHEMA = {
    "type": "object",
    "required": ["$schema", "shared", "profiles"],
    "properties": {
        "$schema": {"const": "https://www.speedscope.app/file-format-schema.json"},
        "shared": {
            "type": "object", "required": ["frames"],
            "properties": {"frames": {"type": "array", "items": {
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "file": {"type": "string"},
                               "line": {"type": "number"}, "col": {"type": "number"}}}}},
        },
        "profiles": {"type": "array", "items": {"oneOf": [
            {"type": "object",
             "required": ["type", "name", "unit", "startValue", "endValue", "samples", "weights"],
             "properties": {
                 "type": {"const": "sampled"}, "name": {"type": "string"},
                 "unit": {"enum": SPEEDSCOPE_UNITS},
                 "startValue": {"type": "number"}, "endValue": {"type": "number"},
                 "samples": {"type": "array", "items": {"type": "array",
                                                         "items": {"type": "integer", "minimum": 0}}},
                 "weights": {"type": "array", "items": {"type": "number"}}}},
            {"type": "object",
             "required": ["type", "name", "unit", "startValue", "endValue", "events"],
             "properties": {
                 "type": {"const": "evented"}, "name": {"type": "string"},
                 "unit": {"enum": SPEEDSCOPE_UNITS},
                 "events": {"type": "array", "items": {
                     "type": "object", "required": ["type", "at", "frame"],
                     "properties": {"type": {"enum": ["O", "C"]}, "at": {"type": "number"},
                                    "frame": {"type": "integer", "minimum": 0}}}}}},
        ]}},
        "name": {"type": "string"},
        "activeProfileIndex": {"type": "number"},
        "exporter": {"type": "string"},
    },
}


@pytest.fixture(scope="session")
def session_profile(tmp_path_factory):
    """A .hatchet written by a real session: Triton kernels run by the interpreter (CPU),
    in two scopes, with launch metadata (grid, block...) on the kernel nodes."""
    import flagtree.profiler as profiler
    from support.kernels import launch_add, launch_copy, tensors

    out = tmp_path_factory.mktemp("session") / "run"
    x, y, z = tensors(256)
    profiler.start(str(out))
    try:
        with profiler.scope("attention"):
            for _ in range(3):
                launch_add(x, y, z)
        with profiler.scope("mlp"):
            launch_copy(x, z)
            launch_add(x, y, z)
    finally:
        profiler.finalize()
    return str(out) + ".hatchet"


def _find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _install_chromium():
    """apt-get install chromium, once, only under CI and as root; returns (path, seconds)."""
    if not os.environ.get("CI"):
        return None, "Chromium is not installed (set CI=1 to let the tests apt-get install it)"
    if not shutil.which("apt-get") or os.geteuid() != 0:
        return None, "Chromium is not installed and cannot be: needs apt-get as root"
    start = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            return None, f"installing Chromium failed: {' '.join(command)}: {done.stderr[-500:]}"
    seconds = time.monotonic() - start
    sys.stderr.write(f"\n[chromium] apt-get install took {seconds:.1f} s\n")
    return _find_chromium(), "apt-get install chromium ran but no chromium binary appeared"


@pytest.fixture(scope="session")
def chromium():
    """The path of a headless-capable Chromium, installed once per session under CI."""
    path = _find_chromium()
    if path is None:
        path, why = _install_chromium()
        if path is None:
            pytest.skip(why)
    return path


def chromium_args(binary, profile_dir):
    # --no-sandbox: CI containers run as root; the host resolver rule keeps every request
    # that would leave the machine from resolving, so a report that needed the network breaks.
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile_dir}",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,900"]


def browser_env():
    """The environment for the browser: without LD_PRELOAD, which dev/asan_tests.sh sets for the
    profiler's libraries (a browser with AddressSanitizer preloaded spins instead of starting)."""
    return {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


def dump_dom(binary, profile_dir, url):
    done = subprocess.run(chromium_args(binary, profile_dir) + ["--dump-dom", url],
                          capture_output=True, text=True, timeout=120, env=browser_env())
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def screenshot(binary, profile_dir, url, path):
    done = subprocess.run(chromium_args(binary, profile_dir) + [f"--screenshot={path}", url],
                          capture_output=True, text=True, timeout=120, env=browser_env())
    assert done.returncode == 0 and os.path.getsize(path) > 0, done.stderr[-2000:]
    return path


def load_json(path):
    with open(path) as handle:
        return json.load(handle)


class DevTools:
    """A headless Chromium driven over the DevTools protocol on a pipe (no port is opened):
    requests go to the browser's fd 3, replies come from its fd 4, NUL-terminated JSON."""

    def __init__(self, binary, profile_dir):
        import fcntl

        to_browser, self._out = os.pipe()
        self._in, from_browser = os.pipe()
        # Above 10 so the shell's moves onto 3 and 4 below never overwrite one another.
        child = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_browser, from_browser)]
        for fd in (to_browser, from_browser):
            os.close(fd)
        script = f'exec 3<&{child[0]} 4>&{child[1]} {child[0]}<&- {child[1]}>&-; exec "$@"'
        self.proc = subprocess.Popen(["bash", "-c", script, "bash"] + chromium_args(binary, profile_dir)
                                     + ["--remote-debugging-pipe", "about:blank"],
                                     pass_fds=child, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env=browser_env())
        for fd in child:
            os.close(fd)
        self._buffer, self._next, self.session = b"", 0, None

    def call(self, method, session=True, **params):
        self._next += 1
        message = {"id": self._next, "method": method, "params": params}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                assert "error" not in reply, reply["error"]
                return reply["result"]

    def _read(self):
        deadline = time.monotonic() + 60
        while b"\0" not in self._buffer:
            assert time.monotonic() < deadline and self.proc.poll() is None, "Chromium stopped answering"
            chunk = os.read(self._in, 1 << 16)
            assert chunk, "Chromium closed the DevTools pipe"
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url):
        target = self.call("Target.createTarget", session=False, url=url)["targetId"]
        self.session = self.call("Target.attachToTarget", session=False, targetId=target, flatten=True)["sessionId"]
        deadline = time.monotonic() + 30
        while not self.eval("!!(document.body && document.body.dataset.readyMs)"):
            assert time.monotonic() < deadline, "the report never finished drawing"
            time.sleep(0.05)

    def eval(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def mouse(self, kind, x, y, clicks=0):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left" if clicks else "none",
                  clickCount=clicks)

    def screenshot(self, path):
        import base64

        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data))
        return path

    def close(self):
        try:
            self.call("Browser.close", session=False)
        except (AssertionError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._in)
        os.close(self._out)
