#include "context/inheritance.h"

#include <mutex>

#include "context/context_source.h"
#include "context/python_frames.h"
#include "core/clock.h"

namespace ftp {

std::atomic<uint64_t> gDriverGeneration{1};

namespace {

struct Driver {
  uint64_t token;
  uint32_t tid;
  ContextSnapshot context;
};

std::mutex driversMutex;
std::vector<Driver>* drivers = new std::vector<Driver>();  // leaked: engine threads outlive statics
uint64_t nextToken = 1;  // under driversMutex

void forgetResolvedNodes(InheritedBase& base) {
  for (auto& uid : base.uid) uid = 0;
}

}  // namespace

ContextSnapshot snapshotContext(bool withFrames) {
  ThreadState& ts = threadState();
  auto snapshot = std::make_shared<InheritedContext>();
  const InheritedContext* base = inheritedContext(ts);
  // The effective stack starts at the innermost rooted entry, else with the inherited scopes.
  size_t from = 0;
  for (size_t i = ts.scopes.size(); i-- > 0;) {
    if (ts.scopes[i].rooted) {
      from = i;
      base = nullptr;
      break;
    }
  }
  if (base) snapshot->scopes = base->scopes;
  for (size_t i = from; i < ts.scopes.size(); ++i) snapshot->scopes.push_back(ts.scopes[i].name);
  snapshot->state = !ts.states.empty() ? ts.states.back() : (base ? base->state : 0);
  if (withFrames) {
    std::vector<uint32_t> own;
    capturePythonFrames(own);
    if (base) snapshot->frames = base->frames;
    snapshot->frames.insert(snapshot->frames.end(), own.begin(), own.end());
  }
  return snapshot;
}

void refreshDriverContext(InheritedBase& base) {
  const uint32_t self = currentTid();
  std::lock_guard<std::mutex> lock(driversMutex);
  base.generation = gDriverGeneration.load(std::memory_order_relaxed);
  ContextSnapshot found;
  // The most recent driving thread other than this one: a thread that itself waits in
  // backward runs its CPU work with its own stack and never inherits from itself.
  for (auto it = drivers->rbegin(); it != drivers->rend(); ++it) {
    if (it->tid != self) {
      found = it->context;
      break;
    }
  }
  if (found != base.driver) {
    base.driver = std::move(found);
    forgetResolvedNodes(base);
  }
}

uint32_t inheritedNode(ThreadState& ts, const ContextTree& s) {
  const InheritedContext* c = inheritedContext(ts);
  if (!c || c->scopes.empty()) return Tree::kRoot;
  InheritedBase& base = ts.base;
  const int slot = s.slot;
  if (base.uid[slot] == s.uid) return base.node[slot];
  std::lock_guard<std::mutex> lock(s.tree.mutex());
  uint32_t node = Tree::kRoot;
  for (uint32_t name : c->scopes) node = s.tree.child(node, NodeKind::Scope, name);
  base.node[slot] = node;
  base.uid[slot] = s.uid;
  return node;
}

void prependInheritedFrames(ThreadState& ts, std::vector<uint32_t>& frames) {
  const InheritedContext* c = inheritedContext(ts);
  if (c && !c->frames.empty()) frames.insert(frames.begin(), c->frames.begin(), c->frames.end());
}

void adoptParentContext(ContextSnapshot parent) {
  InheritedBase& base = threadState().base;
  base.started = true;
  base.parent = std::move(parent);
  forgetResolvedNodes(base);
}

uint64_t beginDriving() {
  ContextSnapshot context = snapshotContext(true);
  const uint32_t tid = currentTid();
  std::lock_guard<std::mutex> lock(driversMutex);
  const uint64_t token = nextToken++;
  drivers->push_back(Driver{token, tid, std::move(context)});
  gDriverGeneration.fetch_add(1, std::memory_order_release);
  return token;
}

void endDriving(uint64_t token) {
  std::lock_guard<std::mutex> lock(driversMutex);
  for (auto it = drivers->begin(); it != drivers->end(); ++it) {
    if (it->token == token) {
      drivers->erase(it);
      gDriverGeneration.fetch_add(1, std::memory_order_release);
      return;
    }
  }
}

}  // namespace ftp
