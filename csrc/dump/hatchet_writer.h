// Writes a calling-context tree as Hatchet's literal JSON, `[root, device_info]`, the layout
// llnl-hatchet's GraphFrame.from_literal and Triton's proton-viewer read. Streams to disk
// without recursion (any depth), through an AtomicOutFile.
#pragma once
#include <cstdint>
#include <functional>

#include "data/tree.h"
#include "dump/out_file.h"
#include "dump/output.h"

namespace ftp {

struct HatchetInput {
  const Tree& tree;
  // The value written for a user metric of a node, given its sum (means for ratio metrics).
  std::function<double(uint32_t node, uint32_t metric, double sum)> metricValue;
};

// Writes the file's text into `file` (the caller commits it once it has released its lock).
// With request.part, nodes with no metrics and nothing kept below them are left out (the root
// stays). Returns the number of nodes written.
uint64_t writeHatchet(const HatchetInput& input, const OutputRequest& request, AtomicOutFile& file);

}  // namespace ftp
