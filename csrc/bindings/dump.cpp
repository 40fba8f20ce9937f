// Python's way to the writers: one call writes a session's store to one output file, or takes
// a part out of it for a writer thread to write later.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unordered_map.h>

#include <memory>
#include <stdexcept>
#include <utility>

#include "dump/out_file.h"
#include "session/profiler.h"

namespace nb = nanobind;

namespace ftp {

namespace {

// A part taken out of a session's store (DataStore::takePart), owned by Python until written.
struct TakenPart {
  std::unique_ptr<DataStore> store;
};

}  // namespace

void registerDumpBindings(nb::module_& m) {
  // Whether every native output is fsynced before its rename (writers/atomic.py's policy).
  m.def("set_fsync", &setSyncOutputs, nb::arg("on"));
  m.def("fsync_outputs", &syncOutputs);
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

  // What session_take_part returns; its write() is session_write's with part set, on the
  // taken data alone, so a writer thread writes it while the session goes on collecting.
  nb::class_<TakenPart>(m, "TakenPart")
      .def(
          "write",
          [](TakenPart& taken, const std::string& path, const std::string& deviceInfo,
             const std::string& otherData, uint64_t originNs, int pid, int64_t deviceShiftNs,
             std::unordered_map<std::string, std::string> kernelMetadata) {
            if (!taken.store) throw std::runtime_error("this part was already written");
            OutputRequest request{path, deviceInfo, otherData, originNs, pid, true, deviceShiftNs, std::move(kernelMetadata)};
            const uint64_t written = taken.store->write(request);
            taken.store.reset();  // written: its memory goes now, not when Python drops the object
            return written;
          },
          nb::arg("path"), nb::arg("device_info") = "{}", nb::arg("other_data") = "{}", nb::arg("origin_ns") = 0,
          nb::arg("pid") = 0, nb::arg("device_shift_ns") = 0,
          nb::arg("kernel_metadata") = std::unordered_map<std::string, std::string>{},
          nb::call_guard<nb::gil_scoped_release>());
  m.def(
      "session_take_part",
      [](int slot) {
        Session* s = Profiler::instance().session(slot);
        if (!s) throw nb::value_error("no profiling session in this slot");
        return TakenPart{s->store().takePart()};
      },
      nb::arg("slot"), nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace ftp
