// flagtree.profiler._native.core.LaunchDoor: what `CompiledKernel.run` is while a launch door is
// open (triton_glue/launch_sight.py). A data descriptor, like the property it replaces: a
// kernel's first `run` asks Triton's property for its launcher and Python's `first_sight` for
// the launcher to use; every later `run` of that kernel finds the choice here, in native code.
//
// The choice is kept in the door, not in the kernel: writing a key into a kernel's instance
// dictionary turns CPython's shared-key dictionary of that object into an ordinary one, for
// good, and every attribute read of the kernel (Triton's launch path makes about ten a launch)
// is then slower (docs/reference/device-timer.md says by how much). An entry goes with its
// kernel (a weak reference's callback) or with close().
#include <nanobind/nanobind.h>

#include <unordered_map>

#include "bindings/bindings.h"

namespace ftp {

namespace {

struct LaunchDoor {
  struct Chosen {
    nb::object launcher;
    nb::object watch;  // a weak reference to the kernel whose callback forgets the entry
  };
  nb::object original;    // Triton's `run` property
  nb::object firstSight;  // (kernel, Triton's launcher) -> the launcher to use
  std::unordered_map<PyObject*, Chosen> chosen;  // kernel -> its choice

  nb::object launcherOf(nb::handle kernel, nb::handle owner) {
    auto it = chosen.find(kernel.ptr());
    if (it != chosen.end()) return it->second.launcher;
    if (!firstSight.is_valid()) {
      PyErr_SetString(PyExc_AttributeError, "the launch door is closed");
      throw nb::python_error();
    }
    nb::object tritons = original.attr("__get__")(kernel, owner);
    nb::object launcher = firstSight(kernel, tritons);
    // Another thread may have chosen while first_sight ran (it may drop the GIL): one choice a kernel.
    it = chosen.find(kernel.ptr());
    if (it != chosen.end()) return it->second.launcher;
    PyObject* key = kernel.ptr();
    nb::object forget = nb::cpp_function([this, key](nb::handle) { chosen.erase(key); });
    nb::object watch = nb::steal(PyWeakref_NewRef(kernel.ptr(), forget.ptr()));
    if (!watch.is_valid()) throw nb::python_error();
    chosen.emplace(key, Chosen{launcher, std::move(watch)});
    return launcher;
  }

  // Drops every choice and both callables: the door keeps nothing alive once closed.
  void close() {
    std::unordered_map<PyObject*, Chosen> gone;
    gone.swap(chosen);  // the weak references die with `gone`, their callbacks never called
    firstSight = nb::object();
  }
};

PyObject* doorGet(PyObject* self, PyObject* kernel, PyObject* owner) {
  if (kernel == nullptr || kernel == Py_None) return Py_NewRef(self);  // CompiledKernel.run: the door
  try {
    LaunchDoor* door = nb::inst_ptr<LaunchDoor>(self);
    return door->launcherOf(kernel, owner ? nb::handle(owner) : nb::handle(Py_None)).release().ptr();
  } catch (nb::python_error& e) {
    e.restore();
  } catch (std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// A data descriptor, as Triton's property is (it has no setter): Python then never looks for
// `run` in the kernel's own dictionary.
int doorSet(PyObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_AttributeError, "CompiledKernel.run cannot be set while a launch door is open");
  return -1;
}

PyType_Slot doorSlots[] = {{Py_tp_descr_get, reinterpret_cast<void*>(doorGet)},
                           {Py_tp_descr_set, reinterpret_cast<void*>(doorSet)},
                           {0, nullptr}};

}  // namespace

void registerLaunchDoor(nb::module_& core) {
  nb::class_<LaunchDoor>(core, "LaunchDoor", nb::type_slots(doorSlots))
      .def(
          "__init__",
          [](LaunchDoor* self, nb::object original, nb::object firstSight) {
            new (self) LaunchDoor{std::move(original), std::move(firstSight), {}};
          },
          nb::arg("original"), nb::arg("first_sight"))
      .def_prop_ro("original", [](LaunchDoor& d) { return d.original; })
      .def("chosen", [](LaunchDoor& d) { return d.chosen.size(); }, "How many kernels have their launcher chosen.")
      .def("close", &LaunchDoor::close);
}

}  // namespace ftp
