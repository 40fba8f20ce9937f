// Python's way to the writers: one call writes a session's store to one output file.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unordered_map.h>

#include "session/profiler.h"

namespace nb = nanobind;

namespace ftp {

void registerDumpBindings(nb::module_& m) {
  // The session's store picks its writer (tree: Hatchet JSON, trace: Chrome trace JSON) and
  // writes atomically; `part` also frees what was written (see OutputRequest).
  m.def(
      "session_write",
      [](int slot, const std::string& path, const std::string& deviceInfo, const std::string& otherData,
         uint64_t originNs, int pid, bool part, int64_t deviceShiftNs,
         std::unordered_map<std::string, std::string> kernelMetadata) {
        Session* s = Profiler::instance().session(slot);
        if (!s) throw nb::value_error("no profiling session in this slot");
        OutputRequest request{path, deviceInfo, otherData, originNs, pid, part, deviceShiftNs, std::move(kernelMetadata)};
        return s->store().write(request);
      },
      nb::arg("slot"), nb::arg("path"), nb::arg("device_info") = "{}", nb::arg("other_data") = "{}",
      nb::arg("origin_ns") = 0, nb::arg("pid") = 0, nb::arg("part") = false, nb::arg("device_shift_ns") = 0,
      nb::arg("kernel_metadata") = std::unordered_map<std::string, std::string>{},
      nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace ftp
