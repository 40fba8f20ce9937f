// The viewer's Node (flagtree.profiler.viewer.nodes.Node, a __slots__ class) as the native
// reader and tree walks see it: the byte offset of each slot, taken from the class's own
// member descriptors, so a field is read or written in place of a getattr/setattr call.
//
// NodeLayout::load checks everything it relies on (an exact class whose seven fields are
// plain object slots, and a probe instance whose __init__ stored what nodes.Node.__init__
// stores) and returns false otherwise: callers then go through the Python API, or give up.
#pragma once
#include <nanobind/nanobind.h>
#include <structmember.h>  // PyMemberDef, T_OBJECT_EX, READONLY

#include <cstring>

#include "core/limited_api.h"

namespace ftp {

struct NodeLayout {
  PyTypeObject* type = nullptr;
  allocfunc alloc = nullptr;
  Py_ssize_t name = 0, kernel = 0, metrics = 0, children = 0, parent = 0, incl = 0, values = 0;
  PyObject* noChildren = nullptr;  // what Node.__init__ gives a leaf (NO_CHILDREN); held below
  nanobind::object noChildrenRef;

  // A slot's value (borrowed; nullptr when the attribute is unset).
  static PyObject* get(PyObject* node, Py_ssize_t offset) {
    return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(node) + offset);
  }
  // Stores `value` (a new reference is taken) and releases the old one.
  static void set(PyObject* node, Py_ssize_t offset, PyObject* value) {
    PyObject** field = reinterpret_cast<PyObject**>(reinterpret_cast<char*>(node) + offset);
    PyObject* old = *field;
    Py_INCREF(value);
    *field = value;
    Py_XDECREF(old);
  }
  bool is(PyObject* node) const { return Py_TYPE(node) == type; }

  // False (and no Python error) unless `cls` has the layout described above.
  bool load(PyObject* cls) {
    if (!PyType_Check(cls)) return false;
    PyTypeObject* t = reinterpret_cast<PyTypeObject*>(cls);
    struct { const char* field; Py_ssize_t* offset; } slots[] = {
        {"name", &name}, {"kernel", &kernel}, {"metrics", &metrics}, {"children", &children},
        {"parent", &parent}, {"incl", &incl}, {"values", &values}};
    if (!findSlots(t, slots)) return false;
    type = t;
    // Node(name, kernel, metrics) must store those three and None in parent, incl, values.
    PyObject* args[] = {Py_Ellipsis, Py_True, Py_NotImplemented};
    PyObject* probe = PyObject_Vectorcall(cls, args, 3, nullptr);
    if (!probe) {
      PyErr_Clear();
      type = nullptr;
      return false;
    }
    bool plain = is(probe) && get(probe, name) == Py_Ellipsis && get(probe, kernel) == Py_True &&
                 get(probe, metrics) == Py_NotImplemented && get(probe, parent) == Py_None &&
                 get(probe, incl) == Py_None && get(probe, values) == Py_None &&
                 get(probe, children) != nullptr;
    if (plain) {
      noChildren = get(probe, children);
      noChildrenRef = nanobind::borrow(noChildren);
    }
    Py_DECREF(probe);
    if (!plain) type = nullptr;
    return plain;
  }

  // Each field's offset, from the member descriptors of the class's own __slots__.
  template <size_t N, typename Slot>
  bool findSlots(PyTypeObject* t, Slot (&slots)[N]) {
#ifdef Py_LIMITED_API
    // The type object is opaque here: its slots come through PyType_GetSlot (a heap type's
    // member table is its own __slots__, the same definitions its descriptors point to).
    alloc = reinterpret_cast<allocfunc>(PyType_GetSlot(t, Py_tp_alloc));
    auto* members = static_cast<PyMemberDef*>(PyType_GetSlot(t, Py_tp_members));
    if (!alloc || !members) return false;
    for (auto& slot : slots) {
      const PyMemberDef* def = members;
      while (def->name && std::strcmp(def->name, slot.field) != 0) ++def;
      if (!def->name || def->type != Py_T_OBJECT_EX || (def->flags & Py_READONLY)) return false;
      *slot.offset = def->offset;
    }
#else
    alloc = t->tp_alloc;
    if (!t->tp_dict || !alloc) return false;
    for (auto& slot : slots) {
      PyObject* descr = PyDict_GetItemString(t->tp_dict, slot.field);  // borrowed
      if (!descr || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) return false;
      PyMemberDef* def = reinterpret_cast<PyMemberDescrObject*>(descr)->d_member;
      if (def->type != T_OBJECT_EX || (def->flags & READONLY)) return false;
      *slot.offset = def->offset;
    }
#endif
    return true;
  }

  // Node(name, kernel, metrics) as nodes.Node.__init__ makes it, without running Python.
  PyObject* make(PyObject* nodeName, bool isKernel, PyObject* nodeMetrics) const {
    PyObject* node = alloc(type, 0);  // zeroed, and GC-tracked like object.__new__'s
    if (!node) return nullptr;
    set(node, name, nodeName);
    set(node, kernel, isKernel ? Py_True : Py_False);
    set(node, metrics, nodeMetrics);
    set(node, children, noChildren);
    set(node, parent, Py_None);
    set(node, incl, Py_None);
    set(node, values, Py_None);
    return node;
  }
};

}  // namespace ftp
