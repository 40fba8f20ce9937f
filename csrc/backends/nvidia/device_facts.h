// The CUDA devices' fixed facts, read on a native thread while the first session runs.
//
// The driver answers the two clock attributes in 0.35-0.7 ms each, every time (H200, driver 580),
// and a Python thread costs ~0.4 ms just to start (it must take the GIL to run): so start()
// launches this query on a C++ thread, which never touches the GIL, and finalize() takes its
// answer (issue 18: the first session's cost). backends/nvidia.py keeps the answer for the process.
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
