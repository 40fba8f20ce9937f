// Triton's launcher call for a kernel whose profile scratch is a ring slot, in native code.
//
// Triton's NVIDIA launcher (CudaLauncher.__call__, Python) asks the profile allocator for the
// scratch pointer through a closure made at every call, then calls the launcher module's
// `launch` with the kernel's constants spliced in. For a stamped kernel that is most of what a
// device-timer session adds to a launch on the host. SlotLauncher makes the same `launch` call
// with the ring's slot claimed directly, for the two argument layouts Triton has used
// (triton_glue/slot_launch.py recognises them and builds this object only for those):
//   flat   (3.5, 3.6):  launch(gx, gy, gz, stream, function, coop, pdl, global, profile, *rest)
//   packed (3.7-3.9):  launch(gx, gy, gz, stream, function, coop, pdl, kernel_metadata,
//                             launch_metadata, enter_hook, exit_hook, global, profile,
//                             annotations, signature, rest)
// where `rest` is what the caller passed after the function. Whenever the profile allocator
// Triton would ask is not ours (another tool installed its own), the call goes to Triton's own
// launcher unchanged.
#include <nanobind/nanobind.h>

#include <vector>

#include "backends/device_timer/device_timer_route.h"

namespace nb = nanobind;

namespace ftp {
namespace {

struct SlotLauncher {
  nb::object launch;          // the launcher module's launch (or Triton's tensor-descriptor wrapper of it)
  nb::object triton;          // Triton's launcher object: the fallback, and what other attributes are read from
  nb::object allocatorOf;     // () -> the profile allocator Triton's launcher would ask now
  nb::object ours;            // our profile allocator (device_timer_allocate)
  nb::object coop, pdl;       // launch_cooperative_grid, launch_pdl as Triton passes them
  nb::object annotations;     // packed layout: arg_annotations
  nb::object signature;       // packed layout: kernel_signature
  bool packed = false;

  nb::object call(nb::args args, nb::kwargs kwargs) {
    const size_t n = args.size();
    const size_t fixed = packed ? 9 : 5;  // grid, stream, function (+ metadata, launch metadata, two hooks)
    if (n < fixed || kwargs.size() || !allocatorOf().is(ours)) return triton(*args, **kwargs);
    nb::handle stream = args[3];
    const uint64_t slot = claimRingSlot(stream);
    nb::int_ profile(slot);
    std::vector<PyObject*> stack;
    stack.reserve(n + 8);
    for (size_t i = 0; i < 5; ++i) stack.push_back(args[i].ptr());  // gx, gy, gz, stream, function
    stack.push_back(coop.ptr());
    stack.push_back(pdl.ptr());
    nb::object rest;
    if (packed) {
      for (size_t i = 5; i < 9; ++i) stack.push_back(args[i].ptr());  // kernel metadata, launch metadata, hooks
      stack.push_back(Py_None);  // global scratch: kernels that need one are not given this launcher
      stack.push_back(profile.ptr());
      stack.push_back(annotations.ptr());
      stack.push_back(signature.ptr());
      rest = nb::steal(PyTuple_New(Py_ssize_t(n - fixed)));
      if (!rest.is_valid()) throw nb::python_error();
      for (size_t i = fixed; i < n; ++i) {
        nb::handle item = args[i];
        PyTuple_SetItem(rest.ptr(), Py_ssize_t(i - fixed), item.inc_ref().ptr());
      }
      stack.push_back(rest.ptr());
    } else {
      stack.push_back(Py_None);
      stack.push_back(profile.ptr());
      for (size_t i = fixed; i < n; ++i) stack.push_back(args[i].ptr());
    }
    PyObject* done = PyObject_Vectorcall(launch.ptr(), stack.data(), stack.size(), nullptr);
    if (!done) throw nb::python_error();
    return nb::steal(done);
  }
};

}  // namespace

void registerSlotLauncher(nb::module_& m) {
  nb::class_<SlotLauncher>(m, "SlotLauncher")
      .def("__init__",
           [](SlotLauncher* self, nb::object launch, nb::object triton, nb::object allocatorOf, nb::object ours,
              nb::object coop, nb::object pdl, bool packed, nb::object annotations, nb::object signature) {
             new (self) SlotLauncher{std::move(launch), std::move(triton), std::move(allocatorOf), std::move(ours),
                                     std::move(coop), std::move(pdl), std::move(annotations), std::move(signature),
                                     packed};
           },
           nb::arg("launch"), nb::arg("triton"), nb::arg("allocator_of"), nb::arg("ours"), nb::arg("coop"),
           nb::arg("pdl"), nb::arg("packed"), nb::arg("annotations").none(), nb::arg("signature").none())
      .def("__call__", &SlotLauncher::call)
      // Anything else (num_ctas, the scratch sizes, ...) is read from Triton's launcher.
      .def("__getattr__", [](SlotLauncher& self, nb::str name) { return nb::getattr(self.triton, name); })
      .def_prop_ro("triton_launcher", [](SlotLauncher& self) { return self.triton; });
}

}  // namespace ftp
