// The CUDA devices' fixed facts, read on a native thread while the first session runs.
//
// The driver is slow to answer each of the two clock attributes, every time, and a Python thread
// costs about as much just to start (it must take the GIL to run; docs/performance.md): so start() launches this query on a C++ thread, which never touches the GIL, and
// finalize() takes its answer, off the first session's path. backends/nvidia.py keeps the answer
// for the process.
#pragma once
#include <vector>

#include "backends/nvidia/cuda_driver.h"

namespace ftp {

// Starts the query unless one is already running or waiting to be taken.
void prefetchCudaDevices();
// The prefetched answer (waiting for it if needed), or a query made now when none was started.
// Rethrows what the query threw (no driver: LibraryNotFound / Unsupported); either way the slot
// is empty afterwards, so a failure is not kept.
std::vector<CudaDeviceInfo> takeCudaDevices();

}  // namespace ftp
