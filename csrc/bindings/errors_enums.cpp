// The native error types (core/errors.h) as Python exception classes, and the native enums, so
// that Python catches by type and names kinds by the native module's own numbering.
#include <nanobind/nanobind.h>

#include "bindings/bindings.h"
#include "core/errors.h"
#include "data/records.h"
#include "data/tree.h"

namespace ftp {

void registerErrorsAndEnums(nb::module_& m) {
  // Subclasses of RuntimeError: `except RuntimeError` and message checks keep working.
  nb::exception<LibraryNotFound>(m, "LibraryNotFound", PyExc_RuntimeError);
  nb::exception<SubscriberTaken>(m, "SubscriberTaken", PyExc_RuntimeError);
  nb::exception<Unsupported>(m, "Unsupported", PyExc_RuntimeError);
  nb::exception<NotInitialized>(m, "NotInitialized", PyExc_RuntimeError);

  // Value names are the spellings the Python API and the output formats use.
  nb::enum_<TimeSource>(m, "TimeSource", nb::is_arithmetic())
      .value("tracer", TimeSource::Tracer)
      .value("device_timer", TimeSource::DeviceTimer);
  nb::enum_<ContextKind>(m, "ContextKind", nb::is_arithmetic())
      .value("shadow", ContextKind::Shadow)
      .value("python", ContextKind::Python);
  nb::enum_<DataKind>(m, "DataKind", nb::is_arithmetic())
      .value("tree", DataKind::Tree)
      .value("trace", DataKind::Trace)
      .value("perfetto", DataKind::Perfetto);
  nb::enum_<NodeKind>(m, "NodeKind", nb::is_arithmetic())
      .value("root", NodeKind::Root)
      .value("scope", NodeKind::Scope)
      .value("frame", NodeKind::Frame)
      .value("state", NodeKind::State)
      .value("kernel", NodeKind::Kernel)
      .value("memcpy", NodeKind::Memcpy)
      .value("memset", NodeKind::Memset)
      .value("line", NodeKind::Line)
      .value("device_scope", NodeKind::DeviceScope);
  nb::enum_<DeviceType>(m, "DeviceType", nb::is_arithmetic())
      .value("HIP", DeviceType::HIP)
      .value("CUDA", DeviceType::CUDA)
      .value("CPU", DeviceType::CPU)
      .value("NPU", DeviceType::NPU)
      .value("MUSA", DeviceType::MUSA)
      .value("COREX", DeviceType::COREX);
  nb::enum_<RecordKind>(m, "RecordKind", nb::is_arithmetic())
      .value("kernel", RecordKind::Kernel)
      .value("memcpy", RecordKind::Memcpy)
      .value("memset", RecordKind::Memset);
}

}  // namespace ftp
