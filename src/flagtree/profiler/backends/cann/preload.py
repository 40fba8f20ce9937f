"""Where the cann backend looks for libmspti.so, and the LD_PRELOAD restart of
``flagtree-profiler``.

MSPTI gives its runtime callbacks and MEMCPY/MEMSET records only to a process started with
libmspti.so in LD_PRELOAD, and reads that variable once, at its first enable call (a static in
its activity and callback managers). So the command starts the target again with it there, and
once the first cann session has started (MSPTI has read it) the variable is put back as it was:
processes the program starts from then on (CANN's own compiler and tool subprocesses among them)
do not load MSPTI; ones started before the first session still do."""
import os
import sys

PRELOAD_MARK = "FLAGTREE_PROFILER_LD_PRELOAD_BEFORE"  # LD_PRELOAD as it was before the restart


def install_dirs():
    """[(where, folder)] after the explicit path and a loaded copy: MSPTI's own default install
    (CANN 9: /usr/local/Ascend/cann, ${HOME}/Ascend/cann for a user) and the older toolkit layout."""
    dirs = []
    for variable in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):  # set_env.sh sets these
        home = os.environ.get(variable, "").strip()
        dirs += [(f"${{{variable}}}/lib64", os.path.join(home, "lib64") if home else None),
                 (f"${{{variable}}}/tools/mspti/lib64", os.path.join(home, "tools", "mspti", "lib64") if home else None)]
    user = os.path.join(os.path.expanduser("~"), "Ascend", "cann")
    for where, root in (("/usr/local/Ascend/cann", "/usr/local/Ascend/cann"), ("${HOME}/Ascend/cann", user),
                        ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/ascend-toolkit/latest")):
        dirs += [(f"{where}/lib64", f"{root}/lib64"), (f"{where}/tools/mspti/lib64", f"{root}/tools/mspti/lib64")]
    return dirs


def restart(path, say):
    """Starts this command again (os.execve) with `path` in LD_PRELOAD; says so when there is none."""
    if path is None:
        say("flagtree-profiler: backend 'cann': no libmspti.so found to preload (see the cann backend's library "
            "search order); MSPTI gives no runtime callbacks or copy records without it, the run goes on")
        return
    env = dict(os.environ)
    env[PRELOAD_MARK] = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = ":".join(filter(None, [os.path.abspath(path), env.get("LD_PRELOAD", "")]))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def keep_from_children():
    """Once MSPTI has read LD_PRELOAD: the variable as it was before the restart, for new processes."""
    before = os.environ.pop(PRELOAD_MARK, None)
    if before is None:
        return
    if before:
        os.environ["LD_PRELOAD"] = before
    else:
        os.environ.pop("LD_PRELOAD", None)
