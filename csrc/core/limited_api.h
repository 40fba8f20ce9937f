// What the native core needs from CPython when it is built on the limited API (the abi3 wheel for
// Python 3.12 and later, Py_LIMITED_API set by nanobind's STABLE_ABI). Version-specific builds
// see none of this and keep CPython's macros.
//
// The limited API has no unchecked accessor macros: they are mapped onto the checked functions,
// which do the same for the exact lists, tuples and floats the callers pass (they check first),
// at the cost of a call. PyDict_SetDefault is not in the limited API either: a look-up then an
// insert does what the callers need of it (a borrowed reference to the value now under the key).
#pragma once
#include <Python.h>

#ifdef Py_LIMITED_API
#define PyList_GET_ITEM(list, i) PyList_GetItem((list), (i))
#define PyList_GET_SIZE(list) PyList_Size(list)
#define PyTuple_GET_ITEM(tuple, i) PyTuple_GetItem((tuple), (i))
#define PyTuple_GET_SIZE(tuple) PyTuple_Size(tuple)
#define PyFloat_AS_DOUBLE(number) PyFloat_AsDouble(number)
#define PyDict_GET_SIZE(dict) PyDict_Size(dict)

namespace ftp {
// PyList_SET_ITEM leaves the old item's reference to the caller (who may release it after);
// PyList_SetItem releases it, so it is taken once more first.
inline void limitedListSetItem(PyObject* list, Py_ssize_t i, PyObject* item) {
  PyObject* old = PyList_GetItem(list, i);  // borrowed; nullptr in a new list
  Py_XINCREF(old);
  PyList_SetItem(list, i, item);
}
inline PyObject* limitedDictSetDefault(PyObject* dict, PyObject* key, PyObject* value) {
  PyObject* there = PyDict_GetItemWithError(dict, key);  // borrowed
  if (there || PyErr_Occurred()) return there;
  if (PyDict_SetItem(dict, key, value) < 0) return nullptr;
  return value;  // the dict now holds a reference
}
}  // namespace ftp
#define PyList_SET_ITEM(list, i, item) ::ftp::limitedListSetItem((list), (i), (item))
#define PyDict_SetDefault(dict, key, value) ::ftp::limitedDictSetDefault((dict), (key), (value))
#endif
