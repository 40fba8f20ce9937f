// What a store is asked to write: one output file of a session (the whole run or a part).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>

namespace ftp {

struct OutputRequest {
  std::string path;
  std::string deviceInfoJson = "{}";  // tree: the second element of [root, device_info]
  // trace: the session metadata, embedded as "otherData"; tree: members the root node carries
  // before its frame (the run id), a place hatchet's and Proton's readers pass over
  std::string otherDataJson = "{}";
  uint64_t originNs = 0;              // trace: host monotonic time shown as t=0
  int pid = 0;                        // trace: the profiled process, for the host tracks
  // A periodic part: the tree leaves out empty nodes and zeroes its metrics once written, the
  // trace empties its event store, so the next part holds only what arrives after.
  bool part = false;
  // trace: added to every device event's start and end (the tracer's clock found off the host's)
  int64_t deviceShiftNs = 0;
  // tree: kernel name -> a JSON object whose members every kernel node of that name carries in
  // its "metadata" (facts known once per kernel, such as what an inductor kernel fuses)
  std::unordered_map<std::string, std::string> kernelMetadataJson;
};

}  // namespace ftp
