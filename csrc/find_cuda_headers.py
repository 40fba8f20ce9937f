"""Print the include directories holding cupti.h and cuda.h, ';'-separated, for CMake.

Order: CUDA_HOME (an explicit toolkit wins), NVIDIA's pip wheels, /usr/local/cuda.
"""
import glob
import os
import sys


def candidates():
    cuda_home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if cuda_home:
        yield os.path.join(cuda_home, "include")
        yield os.path.join(cuda_home, "extras", "CUPTI", "include")
        yield from glob.glob(os.path.join(cuda_home, "targets", "*", "include"))
    for entry in sys.path:
        # nvidia-cuda-* 13 wheels use nvidia/cu13/include; the 12 wheels one folder per library.
        yield from sorted(glob.glob(os.path.join(entry, "nvidia", "cu[0-9]*", "include")), reverse=True)
        yield os.path.join(entry, "nvidia", "cuda_cupti", "include")
        yield os.path.join(entry, "nvidia", "cuda_runtime", "include")
    yield "/usr/local/cuda/include"
    yield "/usr/local/cuda/extras/CUPTI/include"
    yield from glob.glob("/usr/local/cuda/targets/*/include")


def main():
    found = {}
    for directory in candidates():
        for header in ("cupti.h", "cuda.h"):
            if header not in found and os.path.isfile(os.path.join(directory, header)):
                found[header] = directory
    if len(found) < 2:
        return 1
    print(";".join(dict.fromkeys(found.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
