// PC sampling's end marker (keepEnabled): CUPTI's decoder hands the samples of a session over
// some time after the work ends, and cuptiPCSamplingGetData says nothing of what it still holds
// (the 3.2 ms test kernel's ~800,000 samples came in one batch 44-54 ms after the sync on the
// H200). So finalize runs a short kernel of ours on every SM after the session's work; the
// decoder works through the hardware buffer in order, so once the marker's samples are handed
// over, everything sampled before them has been.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <cstring>

namespace ftp {

constexpr const char* kPcMarkerName = "flagtree_pcsampling_end_marker";

inline bool isPcMarker(const char* function) { return function && std::strcmp(function, kPcMarkerName) == 0; }

struct PcMarkerCache {  // per context: the module and function, loaded at the first marker
  CUmodule module = nullptr;
  CUfunction function = nullptr;
};

// Launches the marker in `context`, long enough for a few samples per SM at `period` (log2 of
// cycles between samples); the tracer ignores it. False where it cannot be launched.
bool launchPcMarker(CUcontext context, PcMarkerCache& cache, uint32_t period);

}  // namespace ftp
