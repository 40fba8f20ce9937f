#include "dump/hatchet_writer.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/strings.h"
#include "dump/out_file.h"

namespace ftp {
namespace {

bool hasMetrics(const NodeMetrics& m) {
  return m.count || m.timeNs || m.cpuTimeNs || m.deviceId >= 0 || m.deviceType >= 0 || !m.user.empty();
}

class HatchetWriter {
 public:
  HatchetWriter(const HatchetInput& input, JsonOut& out, std::string rootMembers,
                std::unordered_map<uint32_t, std::string> kernelMembers)
      : in_(input),
        nodes_(input.tree.nodes()),
        out_(out),
        rootMembers_(std::move(rootMembers)),
        kernelMembers_(std::move(kernelMembers)) {}

  uint64_t write(bool prune) {
    markKept(prune);
    indexChildren();
    return writeNodes();
  }

 private:
  // keep_[id]: the node is written. Parents precede children (ids grow), so one backward pass
  // settles every node after all its children.
  void markKept(bool prune) {
    keep_.assign(nodes_.size(), prune ? 0 : 1);
    if (!prune) return;
    for (size_t id = nodes_.size(); id-- > 1;) {
      const auto* properties = in_.tree.propertiesOf(static_cast<uint32_t>(id));
      const bool hasProperties = properties && !properties->empty();
      if (!keep_[id] && !hasMetrics(nodes_[id].metrics) && !hasProperties) continue;
      keep_[id] = 1;
      keep_[nodes_[id].parent] = 1;
    }
    keep_[Tree::kRoot] = 1;
  }

  // Children of each node in creation order, as offsets into one array (no per-node vector).
  void indexChildren() {
    first_.assign(nodes_.size() + 1, 0);
    for (size_t id = 1; id < nodes_.size(); ++id) ++first_[nodes_[id].parent + 1];
    for (size_t i = 1; i < first_.size(); ++i) first_[i] += first_[i - 1];
    children_.resize(nodes_.size() ? nodes_.size() - 1 : 0);
    std::vector<uint32_t> fill(first_.begin(), first_.end() - 1);
    for (size_t id = 1; id < nodes_.size(); ++id) children_[fill[nodes_[id].parent]++] = static_cast<uint32_t>(id);
  }

  // Depth-first with an explicit stack: a chain of any depth writes in constant C++ stack.
  uint64_t writeNodes() {
    struct Frame {
      uint32_t node;
      uint32_t next;  // index into children_ of the next child to look at
      bool wroteChild;
    };
    std::vector<Frame> stack;
    uint64_t written = 1;
    open(Tree::kRoot);
    stack.push_back({Tree::kRoot, first_[Tree::kRoot], false});
    while (!stack.empty()) {
      Frame& top = stack.back();
      const uint32_t end = first_[top.node + 1];
      while (top.next < end && !keep_[children_[top.next]]) ++top.next;
      if (top.next == end) {
        close(top.node);
        stack.pop_back();
        continue;
      }
      const uint32_t child = children_[top.next++];
      if (top.wroteChild) out_.raw(',');
      top.wroteChild = true;
      open(child);
      ++written;
      stack.push_back({child, first_[child], false});
    }
    return written;
  }

  void open(uint32_t id) {
    const TreeNode& n = nodes_[id];
    out_.raw('{');
    if (id == Tree::kRoot && !rootMembers_.empty()) out_.raw(rootMembers_), out_.raw(',');
    out_.raw(R"("frame":{"name":")");
    out_.raw(names_[n.name]);
    out_.raw(R"(","type":"function","kind":")");
    out_.raw(nodeKindName(n.kind));
    out_.raw(R"("},"metrics":{)");
    writeMetrics(id, n.metrics);
    out_.raw(R"(},"children":[)");
  }

  void writeMetrics(uint32_t id, const NodeMetrics& m) {
    bool first = true;
    auto key = [&](const char* quotedKey) {
      if (!first) out_.raw(',');
      first = false;
      out_.raw(quotedKey);
    };
    if (m.count) key(R"("count":)"), out_.integer(m.count);
    if (m.timeNs || m.count) key("\"time (ns)\":"), out_.integer(m.timeNs);
    if (m.cpuTimeNs) key("\"cpu_time (ns)\":"), out_.integer(m.cpuTimeNs);
    if (m.deviceId >= 0) key(R"("device_id":)"), out_.integer(m.deviceId);
    if (m.deviceType >= 0) key(R"("device_type":)"), out_.integer(m.deviceType);
    for (const auto& u : m.user) {
      if (!first) out_.raw(',');
      first = false;
      out_.raw('"');
      out_.raw(names_[u.first]);
      out_.raw("\":");
      out_.number(in_.metricValue(id, u.first, u.second));
    }
    const auto* properties = in_.tree.propertiesOf(id);
    if (!properties) return;
    for (const Property& p : *properties) {
      if (!first) out_.raw(',');
      first = false;
      out_.raw('"');
      out_.raw(names_[p.name]);
      out_.raw("\":");
      if (!p.isText) {
        out_.number(p.number);
        continue;
      }
      text_.clear();
      appendJsonEscaped(p.text, text_);
      out_.raw('"');
      out_.raw(text_);
      out_.raw('"');
    }
  }

  void close(uint32_t id) {
    out_.raw(']');
    const TreeNode& n = nodes_[id];
    if (n.kind == NodeKind::Kernel) {
      const auto extra = kernelMembers_.find(n.name);
      const std::string* members = extra == kernelMembers_.end() ? nullptr : &extra->second;
      if (n.config) {
        writeLaunchDetails(n, members);
      } else if (members) {
        out_.raw(R"(,"metadata":{)");
        out_.raw(*members);
        out_.raw('}');
      }
    }
    out_.raw('}');
  }

  void writeLaunchDetails(const TreeNode& n, const std::string* members) {
    const LaunchConfig& c = in_.tree.configs()[n.config];
    out_.raw(R"(,"metadata":{"grid":)");
    triple(c.grid);
    out_.raw(R"(,"block":)");
    triple(c.block);
    out_.raw(R"(,"registers":)");
    out_.integer(c.registers);
    out_.raw(R"(,"static_shared_memory":)");
    out_.integer(c.staticSharedMemory);
    out_.raw(R"(,"dynamic_shared_memory":)");
    out_.integer(c.dynamicSharedMemory);
    if (n.mangled) {
      out_.raw(R"(,"mangled_name":")");
      out_.raw(names_[n.mangled]);
      out_.raw('"');
    }
    if (members) out_.raw(','), out_.raw(*members);
    out_.raw('}');
  }

  void triple(const int32_t (&v)[3]) {
    out_.raw('[');
    out_.integer(v[0]);
    out_.raw(',');
    out_.integer(v[1]);
    out_.raw(',');
    out_.integer(v[2]);
    out_.raw(']');
  }

  const HatchetInput& in_;
  const std::vector<TreeNode>& nodes_;
  JsonOut& out_;
  EscapedNames names_;
  std::string text_;  // a text property escaped for JSON, reused from one to the next
  std::vector<uint8_t> keep_;
  std::vector<uint32_t> first_;
  std::vector<uint32_t> children_;
  std::string rootMembers_;  // `"key":value,...` written first in the root object, or empty
  std::unordered_map<uint32_t, std::string> kernelMembers_;  // kernel name id -> members of its metadata
};

// The members inside a JSON object's braces ("" for "{}" or anything not an object).
std::string objectMembers(const std::string& json) {
  const size_t open = json.find('{'), close = json.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close <= open) return {};
  std::string inner = json.substr(open + 1, close - open - 1);
  return inner.find_first_not_of(" \t\r\n") == std::string::npos ? std::string() : inner;
}

}  // namespace

uint64_t writeHatchet(const HatchetInput& input, const OutputRequest& request, AtomicOutFile& file) {
  JsonOut out(file);
  out.raw('[');
  std::unordered_map<uint32_t, std::string> kernelMembers;
  for (const auto& [name, json] : request.kernelMetadataJson) {
    std::string members = objectMembers(json);
    if (!members.empty()) kernelMembers.emplace(intern(name), std::move(members));
  }
  const uint64_t written =
      HatchetWriter(input, out, objectMembers(request.otherDataJson), std::move(kernelMembers)).write(request.part);
  out.raw(',');
  out.raw(request.deviceInfoJson);
  out.raw(']');
  return written;
}

}  // namespace ftp
