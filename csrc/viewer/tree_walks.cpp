// The viewer's two whole-tree passes after reading, done over the Nodes' slots
// (viewer/node_layout.h) instead of a Python loop per node:
//
//   viewer_inclusive: profile_tree.compute_inclusive with a list of keys (subtree sums).
//   viewer_tree_rows: render._tree_rows for values stored on the nodes (print order).
//
// Each returns exactly what its Python twin returns, computed the same way (the same
// additions in the same order through PyNumber_Add, the same comparisons), or None, having
// changed nothing, for a tree it does not take: a node that is not a plain Node, children or
// metrics that are not plain dicts, values that are not numbers. The Python code then runs;
// tests run both on the same trees. Nothing recurses: 100,000-deep chains are fine.
#include <nanobind/nanobind.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "viewer/node_layout.h"

namespace nb = nanobind;

namespace ftp {

namespace {

struct GiveUp {};

// Parents before children, as profile_tree.preorder lists them (a stack: the last child is
// visited first), checking that every node and its children dict are plain.
std::vector<PyObject*> preorder(const NodeLayout& layout, PyObject* root, PyObject* noMetrics) {
  std::vector<PyObject*> order, stack{root};
  while (!stack.empty()) {
    PyObject* node = stack.back();
    stack.pop_back();
    if (!layout.is(node)) throw GiveUp();
    PyObject* metrics = NodeLayout::get(node, layout.metrics);
    if (!metrics || (metrics != noMetrics && !PyDict_CheckExact(metrics))) throw GiveUp();
    order.push_back(node);
    PyObject* children = NodeLayout::get(node, layout.children);
    if (children == layout.noChildren) continue;
    if (!children || !PyDict_CheckExact(children)) throw GiveUp();
    Py_ssize_t at = 0;
    PyObject *name, *child;
    while (PyDict_Next(children, &at, &name, &child)) stack.push_back(child);
  }
  return order;
}

nb::list toList(const std::vector<PyObject*>& items) {
  nb::list out = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(items.size())));
  if (!out.is_valid()) throw nb::python_error();
  for (size_t at = 0; at < items.size(); ++at) {
    Py_INCREF(items[at]);
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(at), items[at]);
  }
  return out;
}

// compute_inclusive(root, keys, drop_metrics): every node's incl becomes the list of its
// subtree's sums of `keys` (None where none of the subtree has one); returns the preorder.
nb::object inclusive(nb::handle root, nb::list keys, bool dropMetrics, nb::handle nodeClass,
                     nb::handle noMetrics) {
  NodeLayout layout;
  if (!layout.load(nodeClass.ptr())) return nb::none();
  std::vector<PyObject*> order;
  try {
    order = preorder(layout, root.ptr(), noMetrics.ptr());
  } catch (const GiveUp&) {
    return nb::none();
  }
  const Py_ssize_t width = static_cast<Py_ssize_t>(keys.size());
  std::vector<PyObject*> names(static_cast<size_t>(width));  // borrowed from `keys`
  for (Py_ssize_t k = 0; k < width; ++k) {
    names[k] = PyList_GET_ITEM(keys.ptr(), k);
    if (!PyUnicode_CheckExact(names[k])) return nb::none();
  }
  nb::list out = toList(order);  // holds every node while their links change below
  for (auto node = order.rbegin(); node != order.rend(); ++node) {  // children first
    PyObject* metrics = NodeLayout::get(*node, layout.metrics);
    nb::object incl = nb::steal(PyList_New(width));
    if (!incl.is_valid()) throw nb::python_error();
    for (Py_ssize_t k = 0; k < width; ++k) {
      PyObject* own = metrics == noMetrics.ptr() ? nullptr
                                                 : PyDict_GetItemWithError(metrics, names[k]);
      if (!own && PyErr_Occurred()) throw nb::python_error();
      own = own ? own : Py_None;
      Py_INCREF(own);
      PyList_SET_ITEM(incl.ptr(), k, own);
    }
    PyObject* children = NodeLayout::get(*node, layout.children);
    if (children != layout.noChildren) {
      Py_ssize_t at = 0;
      PyObject *name, *child;
      while (PyDict_Next(children, &at, &name, &child)) {
        PyObject* sums = NodeLayout::get(child, layout.incl);  // made earlier in this loop
        for (Py_ssize_t k = 0; k < width; ++k) {
          PyObject* add = PyList_GET_ITEM(sums, k);
          if (add == Py_None) continue;
          PyObject* total = PyList_GET_ITEM(incl.ptr(), k);
          PyObject* sum;
          if (total == Py_None) {
            sum = add;
            Py_INCREF(sum);
          } else {
            sum = PyNumber_Add(total, add);
            if (!sum) throw nb::python_error();
          }
          PyList_SET_ITEM(incl.ptr(), k, sum);
          Py_DECREF(total);
        }
      }
    }
    NodeLayout::set(*node, layout.incl, incl.ptr());
    if (dropMetrics) NodeLayout::set(*node, layout.metrics, noMetrics.ptr());
  }
  return std::move(out);
}

// One child as View.order sorts it: by (rank, name, position), rank being -first value, or
// +inf for a missing or NaN one. `number` is the rank as a C double when it is a float.
struct Ranked {
  PyObject* node;
  PyObject* name;
  PyObject* rank;  // owned, only where the group has a rank that is not a float
  double number;
  bool isFloat;
  Py_ssize_t position;
};

constexpr double kLast = std::numeric_limits<double>::infinity();

class RowBuilder {
 public:
  RowBuilder(const NodeLayout& layout, long long limit, bool hasLimit, PyObject* cutoff)
      : layout_(layout), limit_(limit), hasLimit_(hasLimit), cutoff_(cutoff) {
    if (cutoff_) cutoffValue_ = PyFloat_AS_DOUBLE(cutoff_);
  }
  ~RowBuilder() { releaseRanks(); }

  void build(PyObject* root) {
    std::vector<Entry> stack{{root, 0, true}};
    while (!stack.empty()) {
      Entry entry = stack.back();
      stack.pop_back();
      nodes_.push_back(entry.node);
      depths_.push_back(entry.depth);
      lasts_.push_back(entry.last);
      PyObject* children = NodeLayout::get(entry.node, layout_.children);
      if (children == layout_.noChildren) continue;
      if (!children || !PyDict_CheckExact(children)) throw GiveUp();
      if (PyDict_GET_SIZE(children) == 0 || (hasLimit_ && entry.depth >= limit_)) continue;
      order(children);
      if (kids_.empty()) continue;
      long long below = entry.depth + 1;
      stack.push_back({kids_.back().node, below, true});
      for (size_t at = kids_.size() - 1; at-- > 0;) stack.push_back({kids_[at].node, below, false});
    }
  }

  nb::object result() {
    nb::list nodes = toList(nodes_);
    nb::list depths = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(depths_.size())));
    nb::list lasts = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(lasts_.size())));
    if (!depths.is_valid() || !lasts.is_valid()) throw nb::python_error();
    for (size_t at = 0; at < depths_.size(); ++at) {
      PyObject* depth = PyLong_FromLongLong(depths_[at]);
      if (!depth) throw nb::python_error();
      PyList_SET_ITEM(depths.ptr(), static_cast<Py_ssize_t>(at), depth);
      PyObject* last = lasts_[at] ? Py_True : Py_False;
      Py_INCREF(last);
      PyList_SET_ITEM(lasts.ptr(), static_cast<Py_ssize_t>(at), last);
    }
    return nb::make_tuple(nodes, depths, lasts);
  }

 private:
  struct Entry {
    PyObject* node;
    long long depth;
    bool last;
  };

  // values_of(node)[0], borrowed: a node's values are a tuple or list (fill_values, diff).
  PyObject* first(PyObject* node) {
    if (!layout_.is(node)) throw GiveUp();
    PyObject* values = NodeLayout::get(node, layout_.values);
    if (values && PyTuple_CheckExact(values) && PyTuple_GET_SIZE(values) > 0)
      return PyTuple_GET_ITEM(values, 0);
    if (values && PyList_CheckExact(values) && PyList_GET_SIZE(values) > 0)
      return PyList_GET_ITEM(values, 0);
    throw GiveUp();
  }

  // View.visible: first is not None and abs(first) >= cutoff.
  bool visible(PyObject* value) {
    if (!cutoff_) return true;
    if (value == Py_None) return false;
    if (PyFloat_CheckExact(value)) return std::fabs(PyFloat_AS_DOUBLE(value)) >= cutoffValue_;
    nb::object size = nb::steal(PyNumber_Absolute(value));
    if (!size.is_valid()) throw nb::python_error();
    int shown = PyObject_RichCompareBool(size.ptr(), cutoff_, Py_GE);
    if (shown < 0) throw nb::python_error();
    return shown == 1;
  }

  // View.children: the visible children, by View.order; left in kids_.
  void order(PyObject* children) {
    releaseRanks();
    kids_.clear();
    Py_ssize_t at = 0, position = 0;
    PyObject *key, *child;
    bool allFloats = true;
    while (PyDict_Next(children, &at, &key, &child)) {
      PyObject* value = first(child);
      if (!visible(value)) continue;
      PyObject* name = NodeLayout::get(child, layout_.name);
      if (!name || !PyUnicode_CheckExact(name)) throw GiveUp();
      Ranked ranked{child, name, nullptr, kLast, true, position++};
      if (value == Py_None) {
      } else if (PyFloat_CheckExact(value)) {
        double number = PyFloat_AS_DOUBLE(value);
        ranked.number = number != number ? kLast : -number;
      } else if (PyLong_CheckExact(value)) {
        ranked.isFloat = allFloats = false;
        ranked.rank = PyNumber_Negative(value);
        if (!ranked.rank) throw nb::python_error();
      } else {
        throw GiveUp();  // a value View.order may compare differently
      }
      kids_.push_back(ranked);
    }
    if (kids_.size() < 2) return;
    if (allFloats) {
      std::sort(kids_.begin(), kids_.end(), [this](const Ranked& a, const Ranked& b) {
        if (a.number != b.number) return a.number < b.number;
        return byName(a, b);
      });
      return;
    }
    for (Ranked& kid : kids_) {  // ints among them: compare as Python compares numbers
      if (!kid.rank && !(kid.rank = PyFloat_FromDouble(kid.number))) throw nb::python_error();
    }
    std::sort(kids_.begin(), kids_.end(), [this](const Ranked& a, const Ranked& b) {
      int same = PyObject_RichCompareBool(a.rank, b.rank, Py_EQ);
      if (same < 0) return failed();
      if (!same) {
        int less = PyObject_RichCompareBool(a.rank, b.rank, Py_LT);
        return less < 0 ? failed() : less == 1;
      }
      return byName(a, b);
    });
    if (failed_) throw nb::python_error();
  }

  // Ties on the rank: by name, then by position (names of siblings differ in practice).
  bool byName(const Ranked& a, const Ranked& b) {
    if (a.name != b.name) {
      int cmp = PyUnicode_Compare(a.name, b.name);
      if (cmp == -1 && PyErr_Occurred()) return failed();
      if (cmp != 0) return cmp < 0;
    }
    return a.position < b.position;
  }

  bool failed() {
    failed_ = true;
    return false;
  }

  void releaseRanks() {
    for (Ranked& kid : kids_) Py_CLEAR(kid.rank);
  }

  const NodeLayout& layout_;
  long long limit_;
  bool hasLimit_;
  PyObject* cutoff_;
  double cutoffValue_ = 0;
  bool failed_ = false;
  std::vector<Ranked> kids_;
  std::vector<PyObject*> nodes_;
  std::vector<long long> depths_;
  std::vector<bool> lasts_;
};

// render._tree_rows(root, view) for a View whose values are node.values: (nodes, depths,
// lasts) in print order, or None.
nb::object treeRows(nb::handle root, nb::handle nodeClass, nb::handle depth, nb::handle cutoff) {
  NodeLayout layout;
  if (!layout.load(nodeClass.ptr()) || !layout.is(root.ptr())) return nb::none();
  long long limit = 0;
  if (!depth.is_none()) {
    if (!PyLong_CheckExact(depth.ptr())) return nb::none();
    int overflow = 0;
    limit = PyLong_AsLongLongAndOverflow(depth.ptr(), &overflow);
    if (overflow || (limit == -1 && PyErr_Occurred())) {
      PyErr_Clear();
      return nb::none();
    }
  }
  if (!cutoff.is_none() && !PyFloat_CheckExact(cutoff.ptr())) return nb::none();
  RowBuilder rows(layout, limit, !depth.is_none(), cutoff.is_none() ? nullptr : cutoff.ptr());
  try {
    rows.build(root.ptr());
  } catch (const GiveUp&) {
    return nb::none();
  }
  return rows.result();
}

}  // namespace

void registerViewerWalkBindings(nb::module_& m) {
  m.def("viewer_inclusive", &inclusive, nb::arg("root"), nb::arg("keys"), nb::arg("drop_metrics"),
        nb::arg("node_class"), nb::arg("no_metrics"),
        "profile_tree.compute_inclusive(root, keys, drop_metrics) over the nodes' slots: the "
        "preorder, or None (nothing changed) for a tree it leaves to Python.");
  m.def("viewer_tree_rows", &treeRows, nb::arg("root"), nb::arg("node_class"), nb::arg("depth").none(),
        nb::arg("cutoff").none(),
        "render._tree_rows for values stored on the nodes: (nodes, depths, lasts), or None.");
}

}  // namespace ftp
