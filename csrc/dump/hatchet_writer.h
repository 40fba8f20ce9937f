// Writes a calling-context tree as Hatchet's literal JSON, `[root, device_info]`, the layout
// llnl-hatchet's GraphFrame.from_literal and Triton's proton-viewer read. Streams to disk
// without recursion (any depth), through an AtomicOutFile.
#pragma once
#include <cstdint>
#include <functional>

#include "data/tree.h"
#include "dump/output.h"

namespace ftp {

struct HatchetInput {
  const Tree& tree;
  // The value written for a user metric of a node, given its sum (means for ratio metrics).
  std::function<double(uint32_t node, uint32_t metric, double sum)> metricValue;
};

// With request.part, nodes with no metrics and nothing kept below them are left out (the
// root stays). Returns the number of nodes written; throws std::runtime_error on failure.
uint64_t writeHatchet(const HatchetInput& input, const OutputRequest& request);

}  // namespace ftp
