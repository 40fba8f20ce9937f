// The viewer's optional fast reader (_native.viewer_read_tree): parses the root node of a tree
// profile's bytes straight into the viewer's Node objects, skipping what the viewer never shows
// (frame extras, launch metadata, text metrics as reader.py skips them). It takes only the plain
// common case and gives up (None) on anything else: escapes or control characters in strings,
// NaN/Infinity, integers beyond int64, metrics neither numbers nor texts, identifiers that are not
// small ints, same-named siblings, repeated node members, deep nesting inside a skipped value, any
// syntax error. The caller then runs the pure-Python reader, which decides the exact result or
// error message: the paths agree by design. Nodes nest through an explicit stack: a 100,000-deep
// chain costs heap, not C stack. Nodes are made and linked through their slots (node_layout.h)
// when the class has Node's layout, through Python calls otherwise. The JSON itself is scanned by
// json_scanner.h.
#include <nanobind/nanobind.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "viewer/json_scanner.h"
#include "viewer/node_layout.h"

namespace nb = nanobind;

namespace ftp {

namespace {

using viewer::GiveUp;

constexpr long long kIdentifierLimit = 1LL << 31;
// In both hooks' scope names (profile_tree.METADATA_SCOPES; reader.METADATA_MARK).
constexpr std::string_view kMetadataMark = "launch_metadata";

// "device_id", "device_type" as str, made once (PyDict_GetItemString makes one per call).
PyObject* const* identifierNames() {
  static PyObject* const names[] = {PyUnicode_InternFromString("device_id"),
                                    PyUnicode_InternFromString("device_type")};
  return names;
}

// One node object being read: the members so far and its finished children.
struct OpenNode {
  nb::object name, metrics;
  bool kernelFrame = false, identifiers = false;  // a frame kind/type "kernel"; device ids
  bool hasFrame = false, hasMetrics = false, hasChildren = false;
  std::vector<nb::object> kids;
};

// A metric name's bytes (inside the file's buffer, alive for the whole read) and its str.
struct Key {
  std::string_view bytes;
  nb::object name;
  bool identifier;  // device_id or device_type
  bool textual;     // may hold a text (a property), skipped: not one of the profiler's own numbers
  bool listed;      // joined the profile's names (at its first number)
};

// The tree builder over the scanner: node objects become Nodes, other values are skipped.
class Reader : public viewer::JsonScanner {
 public:
  Reader(const char* data, size_t size, nb::handle nodeClass, nb::handle names)
      : JsonScanner(data, size), nodeClass_(nodeClass), names_(names) {
    direct_ = layout_.load(nodeClass.ptr());
  }

  nb::object tree();  // the node object at p_ with its subtree, as a Node
  bool metadataNames() const { return metadataNames_; }

 private:
  Key& key();
  void frame(OpenNode& node), metrics(OpenNode& node);
  bool kernelWord();  // a string value, validated: true if it is "kernel"
  bool member(OpenNode& node);  // true: the member is "children" and a child starts at p_
  nb::object finish(OpenNode& node);

  nb::handle nodeClass_, names_;
  NodeLayout layout_;
  bool direct_ = false;  // layout_ loaded: nodes are made and linked without Python calls
  bool metadataNames_ = false;
  // Metric names, shared by every node: a profile has a handful, so a scan beats hashing.
  std::vector<Key> keys_;
};

Key& Reader::key() {
  auto [begin, stop] = rawString();
  std::string_view bytes(begin, stop - begin);
  for (Key& known : keys_) {
    if (known.bytes == bytes) return known;
  }
  PyObject* text = viewer::decode(begin, stop);
  PyUnicode_InternInPlace(&text);
  nb::object name = nb::steal(text);
  const bool identifier = bytes == "device_id" || bytes == "device_type";
  // As nodes.py's NUMBER_ONLY: a text there is a broken profile, which reader.py explains.
  const bool numberOnly = bytes == "count" || bytes == "time (ns)" || bytes == "cpu_time (ns)";
  keys_.push_back({bytes, name, identifier, !identifier && !numberOnly, false});
  return keys_.back();
}

void Reader::frame(OpenNode& node) {
  if (node.hasFrame) throw GiveUp();  // a repeated member: Python keeps the last one
  node.hasFrame = true;
  expect('{');
  bool kind = false, type = false;
  if (peek() == '}') throw GiveUp();  // no name
  while (true) {
    auto [begin, stop] = rawString();
    std::string_view field(begin, stop - begin);
    expect(':');
    char c = peek();
    if (field == "name" && c == '"') {
      auto [nameBegin, nameStop] = rawString();
      node.name = nb::steal(viewer::decode(nameBegin, nameStop));
      // A name with the mark may be a launch_metadata hook's scope, which profile_tree hides.
      if (!metadataNames_ && static_cast<size_t>(nameStop - nameBegin) >= kMetadataMark.size())
        metadataNames_ = std::string_view(nameBegin, nameStop - nameBegin).find(kMetadataMark) !=
                         std::string_view::npos;
    } else if ((field == "kind" || field == "type") && c == '"') {
      (field == "kind" ? kind : type) = kernelWord();
    } else {
      if (field == "name" || field == "frame") throw GiveUp();  // not a string; a nested node
      if (field == "kind") kind = false;
      if (field == "type") type = false;
      skipValue();
    }
    if (peek() == ',') { ++p_; continue; }
    expect('}');
    break;
  }
  if (!node.name.is_valid()) throw GiveUp();
  node.kernelFrame = kind || type;
}

bool Reader::kernelWord() {
  const char* begin = p_;
  skipString();  // checks the UTF-8, as decoding it would
  return p_ - begin == 8 && std::memcmp(begin, "\"kernel\"", 8) == 0;
}

void Reader::metrics(OpenNode& node) {
  if (node.hasMetrics) throw GiveUp();
  node.hasMetrics = true;
  expect('{');
  PyObject* dict = PyDict_New();
  if (!dict) throw nb::python_error();
  node.metrics = nb::steal(dict);
  if (peek() == '}') { ++p_; return; }
  while (true) {
    Key& name = key();
    expect(':');
    char c = peek();
    if (c == '"' && name.textual) {
      // A text property (a scope's "(pty)"): the viewer shows numbers only, as reader.py does.
      skipString();
      if (peek() == ',') { ++p_; continue; }
      expect('}');
      break;
    }
    node.identifiers = node.identifiers || name.identifier;
    if (!(c == '-' || (c >= '0' && c <= '9'))) throw GiveUp();  // not a number
    nb::object value = number();
    if (PyDict_SetItem(dict, name.name.ptr(), value.ptr()) < 0) throw nb::python_error();
    // Metric names are the only keys read here: each one with a number joins the profile's names.
    if (!name.listed) {
      if (PySet_Add(names_.ptr(), name.name.ptr()) < 0) throw nb::python_error();
      name.listed = true;
    }
    if (peek() == ',') { ++p_; continue; }
    expect('}');
    break;
  }
  for (int at = 0; node.identifiers && at < 2; ++at) {
    PyObject* value = PyDict_GetItem(dict, identifierNames()[at]);  // borrowed
    if (!value) continue;
    if (!PyLong_CheckExact(value)) throw GiveUp();
    long long number = PyLong_AsLongLong(value);
    if (number < 0 || number >= kIdentifierLimit) throw GiveUp();
  }
}

bool Reader::member(OpenNode& node) {
  auto [begin, stop] = rawString();
  std::string_view field(begin, stop - begin);
  expect(':');
  if (field == "frame") {
    frame(node);
  } else if (field == "metrics") {
    metrics(node);
  } else if (field == "children") {
    if (node.hasChildren) throw GiveUp();
    node.hasChildren = true;
    expect('[');
    if (peek() == ']') { ++p_; return false; }
    return true;
  } else {
    skipValue();
  }
  return false;
}

nb::object Reader::finish(OpenNode& node) {
  if (!node.hasFrame) throw GiveUp();
  if (!node.metrics.is_valid()) node.metrics = nb::steal(PyDict_New());
  PyObject* metrics = node.metrics.ptr();
  bool kernel = node.kernelFrame || node.identifiers;
  PyObject* made;
  if (direct_) {
    made = layout_.make(node.name.ptr(), kernel, metrics);
  } else {
    PyObject* args[] = {node.name.ptr(), kernel ? Py_True : Py_False, metrics};
    made = PyObject_Vectorcall(nodeClass_.ptr(), args, 3, nullptr);
  }
  if (!made) throw nb::python_error();
  nb::object result = nb::steal(made);
  if (!node.kids.empty()) {
    nb::object children = nb::steal(PyDict_New());
    if (!children.is_valid()) throw nb::python_error();
    static PyObject* parentName = PyUnicode_InternFromString("parent");
    static PyObject* nameName = PyUnicode_InternFromString("name");
    static PyObject* childrenName = PyUnicode_InternFromString("children");
    for (nb::object& kid : node.kids) {
      nb::object name = direct_ ? nb::borrow(NodeLayout::get(kid.ptr(), layout_.name))
                                : nb::steal(PyObject_GetAttr(kid.ptr(), nameName));
      if (!name.is_valid()) throw nb::python_error();
      PyObject* there = PyDict_SetDefault(children.ptr(), name.ptr(), kid.ptr());  // borrowed
      if (!there) throw nb::python_error();
      if (there != kid.ptr()) throw GiveUp();  // same-named siblings: they merge
      if (direct_)
        NodeLayout::set(kid.ptr(), layout_.parent, made);
      else if (PyObject_SetAttr(kid.ptr(), parentName, made) < 0)
        throw nb::python_error();
    }
    if (direct_)
      NodeLayout::set(made, layout_.children, children.ptr());
    else if (PyObject_SetAttr(made, childrenName, children.ptr()) < 0)
      throw nb::python_error();
  }
  return result;
}

nb::object Reader::tree() {
  std::vector<OpenNode> stack;
  expect('{');
  stack.emplace_back();
  bool memberDue = false;  // after a ',' between members: one must follow, not '}'
  while (true) {
    OpenNode& node = stack.back();
    // Members until the node ends or a child begins.
    bool childStarts = false;
    if (memberDue || peek() != '}') {
      while (true) {
        if (member(node)) { childStarts = true; break; }
        if (peek() == ',') { ++p_; continue; }
        break;
      }
    }
    memberDue = false;
    if (childStarts) {
      expect('{');
      stack.emplace_back();
      continue;
    }
    expect('}');
    // The node is complete; hand it to its parent, whose children list goes on or ends.
    while (true) {
      nb::object done = finish(stack.back());
      stack.pop_back();
      if (stack.empty()) return done;
      stack.back().kids.push_back(std::move(done));
      if (peek() == ',') {
        ++p_;
        expect('{');
        stack.emplace_back();
        break;
      }
      expect(']');
      if (peek() == ',') {  // more members of the parent
        ++p_;
        memberDue = true;
        break;
      }
      expect('}');
    }
  }
}

// (root Node, offset just past it, whether a node's name has the launch_metadata mark) for
// bytes that start "[{", or None: see the top comment.
nb::object readTree(nb::bytes data, nb::handle nodeClass, nb::handle names) {
  Reader reader(data.c_str(), data.size(), nodeClass, names);
  try {
    reader.expect('[');
    nb::object root = reader.tree();
    return nb::make_tuple(root, reader.pos() - data.c_str(), reader.metadataNames());
  } catch (const GiveUp&) {
    return nb::none();
  }
}

}  // namespace

void registerViewerBindings(nb::module_& m) {
  m.def("viewer_read_tree", &readTree, nb::arg("data"), nb::arg("node_class"), nb::arg("names"),
        "Fast path of the viewer's reader: (root Node, end offset, launch_metadata mark in a "
        "node name), or None where the "
        "pure-Python reader must decide (see csrc/viewer/tree_reader.cpp).");
}

}  // namespace ftp
