// `_native.context.Scope`: the base of flagtree.profiler.scope, so that making a scope, entering
// and leaving it are C calls with no Python frame. A scope sits on the program's hot path (around
// every step, often every launch), where each Python frame, global and attribute look-up costs
// more than the profiler's own work once the step's memory traffic has cooled the caches.
//
// A CPython type of its own rather than a nanobind class: measured cold, a nanobind class made,
// entered and left cost about half as much again as this type (its argument dispatch and
// instance look-up). It uses the limited API only (the abi3 wheel). What is rare goes back to scope.py through the callables scope_setup hands
// over: a name not seen before (_intern checks and interns it), metrics (_metric_items checks
// them), a scope left out of order (_warn_mismatch), the boundary hook of backward attribution.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <new>

#include "bindings/bindings.h"
#include "session/profiler.h"

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>  // T_OBJECT_EX and READONLY, named Py_T_OBJECT_EX, Py_READONLY since 3.12
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#endif

namespace ftp {
namespace {

struct ScopeObject {
  PyObject_HEAD
  PyObject* name;      // the str given; Python reads it as .name
  ScopeMetrics* metrics;  // metrics given (names interned), added at each entry; nullptr: none
  uint32_t id;         // the interned name; 0 while profiling is disabled
  bool cpuTimed;       // a cpu_timed_scope: its exit adds its CPU time to its node
};

// What scope.py hands over once at import (scope_setup), and the boundary hook it sets and clears.
struct ScopeSetup {
  PyObject* ids = nullptr;  // scope.py's dict name -> interned id, shared with its _intern
  PyObject* intern = nullptr;
  PyObject* metricItems = nullptr;
  PyObject* warnMismatch = nullptr;
  PyObject* cpuTimedType = nullptr;
  PyObject* boundaryHook = nullptr;  // nullptr while none is set: the common path tests one pointer
  bool disabled = false;             // profiling off (ranks.profiling_off()): a scope does nothing
};
ScopeSetup setup;

ScopeObject* asScope(PyObject* self) { return reinterpret_cast<ScopeObject*>(self); }

// Profiler calls may only throw what allocation throws; none may cross into CPython.
template <typename Call>
bool guarded(Call&& call) {
  try {
    call();
    return true;
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return false;
}

// scope(name, metrics=None): positional arguments without a parse, the rest through CPython's.
bool parseArguments(PyObject* args, PyObject* kwds, PyObject** name, PyObject** metrics) {
  const Py_ssize_t count = PyTuple_Size(args);
  if (!kwds && (count == 1 || count == 2)) {
    *name = PyTuple_GetItem(args, 0);
    if (count == 2) *metrics = PyTuple_GetItem(args, 1);
    return true;
  }
  static char* keywords[] = {const_cast<char*>("name"), const_cast<char*>("metrics"), nullptr};
  return PyArg_ParseTupleAndKeywords(args, kwds, "O|O:scope", keywords, name, metrics);
}

// A name seen before is one dict look-up; a new one goes to scope.py's _intern, which checks it
// (a lone surrogate is a ValueError) and adds it to the same dict.
bool internedId(PyObject* name, uint32_t* id) {
  PyObject* found = PyDict_GetItemWithError(setup.ids, name);  // borrowed
  if (found) Py_INCREF(found);
  else if (!PyErr_Occurred()) found = PyObject_CallFunctionObjArgs(setup.intern, name, nullptr);
  if (!found) return false;
  *id = static_cast<uint32_t>(PyLong_AsUnsignedLong(found));
  Py_DECREF(found);
  return !PyErr_Occurred();
}

// As scope.py did: metrics that are falsy (None, {}) are none; others are checked by _metric_items.
bool checkedMetrics(PyObject* metrics, ScopeMetrics** out) {
  const int given = metrics == Py_None ? 0 : PyObject_IsTrue(metrics);
  if (given <= 0) return given == 0;
  PyObject* items = PyObject_CallFunctionObjArgs(setup.metricItems, metrics, nullptr);
  if (!items) return false;
  // `items`: what _metric_items returns, (sums, properties); interned as scope_exit_checked's are.
  const bool converted = guarded([&] {
    auto lists = nb::cast<std::pair<MetricsIn, PropertiesIn>>(nb::handle(items));
    *out = new ScopeMetrics(scopeMetrics(lists.first, lists.second));
  });
  Py_DECREF(items);
  return converted;
}

void scopeDealloc(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  delete asScope(self)->metrics;
  Py_XDECREF(asScope(self)->name);
  reinterpret_cast<freefunc>(PyType_GetSlot(type, Py_tp_free))(self);
  Py_DECREF(type);  // a heap type's instances hold a reference to it
}

PyObject* scopeNew(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  PyObject *name = nullptr, *metrics = Py_None;
  if (!parseArguments(args, kwds, &name, &metrics)) return nullptr;
  if (!setup.ids) return PyErr_Format(PyExc_RuntimeError, "flagtree.profiler.scope was not set up");
  if (!PyUnicode_CheckExact(name)) return PyErr_Format(PyExc_TypeError, "scope name must be a string, got %R", name);
  ScopeMetrics* given = nullptr;
  uint32_t id = 0;
  if (!checkedMetrics(metrics, &given) || (!setup.disabled && !internedId(name, &id))) {
    delete given;
    return nullptr;
  }
  PyObject* self = reinterpret_cast<allocfunc>(PyType_GetSlot(type, Py_tp_alloc))(type, 0);
  if (!self) {
    delete given;
    return nullptr;
  }
  ScopeObject* scope = asScope(self);
  scope->name = Py_NewRef(name);
  scope->metrics = given;
  scope->id = id;
  scope->cpuTimed = PyType_IsSubtype(type, reinterpret_cast<PyTypeObject*>(setup.cpuTimedType));
  return self;
}

// Backward-by-forward-layer attribution, when on, is told of every boundary after it is crossed.
bool boundaryCrossed() {
  if (!setup.boundaryHook) return true;
  PyObject* hook = Py_NewRef(setup.boundaryHook);  // held: the hook may clear itself while it runs
  PyObject* result = PyObject_CallNoArgs(hook);
  Py_DECREF(hook);
  Py_XDECREF(result);
  return result != nullptr;
}

PyObject* scopeEnter(PyObject* self, PyObject*) {
  if (!setup.disabled) {
    static const ScopeMetrics none;
    ScopeObject* scope = asScope(self);
    if (!guarded([&] { Profiler::instance().enterScope(scope->id, scope->metrics ? *scope->metrics : none); }))
      return nullptr;
    if (!boundaryCrossed()) return nullptr;
  }
  return Py_NewRef(self);
}

// Leaving a scope other than this one (a scope entered by enter_scope and left open inside) is
// said by scope.py's _warn_mismatch, once per name.
bool warnIfMismatched(ScopeObject* scope, uint32_t left) {
  if (left == scope->id) return true;
  PyObject* result = PyObject_CallFunction(setup.warnMismatch, "OI", scope->name, left);
  Py_XDECREF(result);
  return result != nullptr;
}

PyObject* scopeExit(PyObject* self, PyObject* const*, Py_ssize_t count) {
  if (count > 3) return PyErr_Format(PyExc_TypeError, "__exit__ takes at most 3 arguments (%zd given)", count);
  if (!setup.disabled) {
    ScopeObject* scope = asScope(self);
    static const MetricsIn noSums;
    static const PropertiesIn noProperties;
    uint32_t left = kNoScope;
    if (!guarded([&] { left = exitScopeChecked(scope->cpuTimed, noSums, noProperties); })) return nullptr;
    if (!warnIfMismatched(scope, left) || !boundaryCrossed()) return nullptr;
  }
  return Py_NewRef(Py_False);
}

PyMethodDef scopeMethods[] = {
    {"__enter__", scopeEnter, METH_NOARGS, nullptr},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(scopeExit)), METH_FASTCALL, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyMemberDef scopeMembers[] = {
    {"name", Py_T_OBJECT_EX, offsetof(ScopeObject, name), Py_READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot scopeSlots[] = {
    {Py_tp_new, reinterpret_cast<void*>(scopeNew)},
    {Py_tp_dealloc, reinterpret_cast<void*>(scopeDealloc)},
    {Py_tp_methods, scopeMethods},
    {Py_tp_members, scopeMembers},
    {Py_tp_doc, const_cast<char*>("Scope(name, metrics=None)\n--\n\n"
                                  "The native part of flagtree.profiler.scope: making, entering, leaving.")},
    {0, nullptr}};

PyType_Spec scopeSpec = {"flagtree.profiler._native.context.Scope", sizeof(ScopeObject), 0,
                         Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, scopeSlots};

void hold(PyObject** slot, nb::handle value) {
  PyObject* old = *slot;
  *slot = value.is_none() ? nullptr : Py_NewRef(value.ptr());
  Py_XDECREF(old);
}

}  // namespace

void registerScopeType(nb::module_& m) {
  PyObject* type = PyType_FromSpec(&scopeSpec);
  if (!type) throw nb::python_error();
  m.attr("Scope") = nb::steal(type);
  m.def("scope_setup", [](nb::dict ids, nb::callable intern, nb::callable metricItems, nb::callable warnMismatch,
                          nb::type_object cpuTimed, bool disabled) {
    hold(&setup.ids, ids);
    hold(&setup.intern, intern);
    hold(&setup.metricItems, metricItems);
    hold(&setup.warnMismatch, warnMismatch);
    hold(&setup.cpuTimedType, cpuTimed);
    setup.disabled = disabled;
  }, nb::arg("ids"), nb::arg("intern"), nb::arg("metric_items"), nb::arg("warn_mismatch"), nb::arg("cpu_timed"),
     nb::arg("disabled"));
  m.def("scope_boundary_hook", [](nb::object hook) { hold(&setup.boundaryHook, hook); }, nb::arg("hook").none(),
        "Called after every scope boundary a Scope crosses; None: nothing is.");
}

}  // namespace ftp
