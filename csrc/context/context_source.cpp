#include "context/context_source.h"

#include <mutex>

#include "context/inheritance.h"
#include "context/python_frames.h"

namespace ftp {

uint32_t ShadowContext::resolve(ThreadState& ts, const ContextTree& s) const {
  auto& stack = ts.scopes;
  if (stack.empty()) return inheritedNode(ts, s);  // an empty stack inherits (context/inheritance.h)
  const int slot = s.slot;
  int resolved = static_cast<int>(stack.size()) - 1;
  while (resolved >= 0 && stack[resolved].uid[slot] != s.uid) --resolved;
  if (resolved == static_cast<int>(stack.size()) - 1) return stack[resolved].node[slot];
  // Resolve the scopes entered since this session last looked, under one lock.
  const uint32_t below = resolved >= 0 ? stack[resolved].node[slot] : inheritedNode(ts, s);
  std::lock_guard<std::mutex> lock(s.tree.mutex());
  uint32_t node = below;
  for (size_t i = resolved + 1; i < stack.size(); ++i) {
    if (stack[i].rooted) node = Tree::kRoot;  // a backward op under its forward scope
    node = s.tree.child(node, NodeKind::Scope, stack[i].name);
    stack[i].node[slot] = node;
    stack[i].uid[slot] = s.uid;
  }
  return node;
}

uint32_t PythonContext::resolve(ThreadState& ts, const ContextTree& s) const {
  if (ts.framesSerial != ts.launchSerial) {  // the first python session of this launch
    capturePythonFrames(ts.frames);
    prependInheritedFrames(ts, ts.frames);  // the starter's or the backward driver's frames first
    ts.framesSerial = ts.launchSerial;
    if (ts.frames != ts.cachedFrames) {
      ts.cachedFrames = ts.frames;
      for (auto& uid : ts.cachedUid) uid = 0;
    }
  }
  const int slot = s.slot;
  if (ts.cachedUid[slot] == s.uid) return ts.cachedNode[slot];
  std::lock_guard<std::mutex> lock(s.tree.mutex());
  uint32_t node = Tree::kRoot;
  for (uint32_t frame : ts.frames) node = s.tree.child(node, NodeKind::Frame, frame);
  ts.cachedNode[slot] = node;
  ts.cachedUid[slot] = s.uid;
  return node;
}

namespace {
// Stateless (their state lives in ThreadState): constant-initialised, no guard on the launch path.
const ShadowContext kShadow;
const PythonContext kPython;
}  // namespace

const ContextSource& contextSource(ContextKind kind) {
  return kind == ContextKind::Python ? static_cast<const ContextSource&>(kPython) : kShadow;
}

}  // namespace ftp
