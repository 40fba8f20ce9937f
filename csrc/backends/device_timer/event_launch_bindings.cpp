// backend="device_timer": the event-timed launches (event_launches.h) as Python sees them. A
// launcher the stamps cannot reach is wrapped (backends/device_timer/event_timed.py) by a Python
// function that makes one call here, device_timer_event_launch: it records the start event on
// the launch's stream, calls the launcher, records the end event. Each wrapped launcher is an
// entry (its kernel's name, where its stream argument is) counting its launches.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/device_timer/cuda_ring_device.h"
#include "backends/device_timer/device_timer_route.h"
#include "backends/device_timer/event_launches.h"
#include "bindings/bindings.h"
#include "core/clock.h"
#include "core/strings.h"

namespace ftp {
namespace {

struct Entry {
  uint32_t name;
  int streamAt;  // the stream's position in the launcher's arguments; -1: the keyword `stream`
  std::atomic<uint64_t> timed{0}, captured{0}, untimed{0};
};

struct EventRoute {
  std::mutex mutex;
  std::unique_ptr<EventDevice> device;
  std::unique_ptr<EventLaunches> launches;
  std::vector<std::unique_ptr<Entry>> entries;  // ids index them; kept for the process's life
  std::unique_ptr<EventDevice> (*hostDevice)(RingDevice&) = nullptr;  // the CPU tests' stand-in
};

EventRoute& events() {
  static auto* r = new EventRoute();  // leaked, as the ring's route
  return *r;
}

Entry& entryOf(uint32_t id) {
  EventRoute& r = events();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (id >= r.entries.size()) throw std::invalid_argument("device_timer: no event-timed launcher of that id");
  return *r.entries[id];
}

// The stream handle a launch passes (None: the default stream), false when it is not an int.
bool streamOf(const Entry& e, nb::tuple args, nb::dict kwargs, uint64_t& stream) {
  PyObject* value = nullptr;
  if (e.streamAt >= 0) {
    if (size_t(e.streamAt) >= args.size()) return false;
    value = PyTuple_GetItem(args.ptr(), e.streamAt);
  } else {
    value = PyDict_GetItemString(kwargs.ptr(), "stream");
    if (!value) return false;
  }
  if (value == Py_None) return stream = 0, true;
  if (!PyLong_Check(value)) return false;
  stream = PyLong_AsUnsignedLongLongMask(value);
  return !PyErr_Occurred();
}

// Triton's launcher starts (grid x, grid y, grid z, stream, ...); others carry no grid we know.
void gridOf(const Entry& e, nb::tuple args, int32_t grid[3]) {
  if (e.streamAt != 3) return;
  for (int i = 0; i < 3; ++i) {
    PyObject* value = PyTuple_GetItem(args.ptr(), i);  // the stable ABI has no GET_ITEM macro
    grid[i] = value && PyLong_Check(value) ? int32_t(PyLong_AsLong(value)) : 0;
  }
  PyErr_Clear();
}

// A pair for this launch, or why there is none (EventLaunches' codes, kUntimed for another device).
int beginLaunch(EventLaunches& launches, Entry& e, uint64_t stream, const int32_t grid[3]) {
  RingDevice::Where where = launches.onDevice();
  if (where == RingDevice::kNoContext && makeRingCurrent()) where = RingDevice::kYes;
  if (where != RingDevice::kYes) return EventLaunches::kUntimed;
  int pair = launches.begin(stream, e.name, grid);
  while (pair == EventLaunches::kFull) {
    {
      nb::gil_scoped_release unlocked;  // the drain waits for the device; other threads go on
      launches.awaitRoom();
    }
    pair = launches.begin(stream, e.name, grid);
  }
  return pair;
}

nb::object call(nb::handle launch, nb::tuple args, nb::dict kwargs) {
  PyObject* result = PyObject_Call(launch.ptr(), args.ptr(), kwargs.ptr());
  if (!result) throw nb::python_error();
  return nb::steal(result);
}

nb::object eventLaunch(uint32_t id, nb::handle launch, nb::tuple args, nb::dict kwargs) {
  Entry& e = entryOf(id);
  EventLaunches* launches = events().launches.get();
  uint64_t stream = 0;
  int32_t grid[3] = {0, 0, 0};
  if (!launches || !streamOf(e, args, kwargs, stream)) {
    e.untimed.fetch_add(1, std::memory_order_relaxed);
    return call(launch, args, kwargs);
  }
  gridOf(e, args, grid);
  const int pair = beginLaunch(*launches, e, stream, grid);
  if (pair < 0) {
    (pair == EventLaunches::kCapturing ? e.captured : e.untimed).fetch_add(1, std::memory_order_relaxed);
    return call(launch, args, kwargs);
  }
  PyObject* result = PyObject_Call(launch.ptr(), args.ptr(), kwargs.ptr());
  (launches->end(pair, result != nullptr) ? e.timed : e.untimed).fetch_add(1, std::memory_order_relaxed);
  if (!result) throw nb::python_error();
  return nb::steal(result);
}

nb::dict eventStats() {
  nb::dict d;
  EventLaunches* launches = events().launches.get();
  if (!launches) return d;
  const EventStats s = launches->stats();
  d["event_launches_timed"] = s.timed;
  d["event_records"] = s.delivered;
  d["event_captured_untimed"] = s.captured;
  d["event_untimed"] = s.untimed;
  d["event_pool_waits"] = s.poolWaits;
  d["event_drains"] = s.drains;
  return d;
}

}  // namespace

void stopEventLaunches() {
  EventRoute& r = events();
  r.launches.reset();  // drains
  r.device.reset();
}

void registerEventLaunchBindings(nb::module_& m) {
  // Starts the event-timed launches beside the ring (kept while the ring is; `pairs` bounds the
  // launches awaiting a drain); returns the anchor's uncertainty (ns).
  m.def("device_timer_events_start", [](uint32_t pairs) {
    EventRoute& r = events();
    TimerRing* ring = deviceTimerRing();
    if (!ring) throw std::runtime_error("backend 'device_timer': the ring is not started");
    if (!r.launches) {
      nb::gil_scoped_release unlocked;
      if (deviceTimerCuda()) r.device = deviceTimerCuda()->eventDevice();
      else if (deviceTimerHost() && r.hostDevice) r.device = r.hostDevice(*deviceTimerHost());
      else throw std::runtime_error("backend 'device_timer': no device for timing events");
      r.launches = std::make_unique<EventLaunches>(*r.device, *ring, pairs);
    }
    return r.launches->stats().anchorUncertaintyNs;
  }, nb::arg("pairs"));
  m.def("device_timer_events_running", [] { return events().launches != nullptr; });
  m.def("device_timer_events_drain", [] {
    nb::gil_scoped_release unlocked;
    if (EventLaunches* launches = events().launches.get()) launches->drain();
  });
  m.def("device_timer_event_stats", &eventStats);
  // A launcher's entry: its kernel's name and its stream's position (-1: the keyword `stream`).
  m.def("device_timer_event_launcher", [](const std::string& name, int streamAt) {
    EventRoute& r = events();
    auto entry = std::make_unique<Entry>();
    entry->name = intern(name);
    entry->streamAt = streamAt;
    std::lock_guard<std::mutex> lock(r.mutex);
    r.entries.push_back(std::move(entry));
    return uint32_t(r.entries.size() - 1);
  }, nb::arg("name"), nb::arg("stream_at"));
  // (timed, captured, untimed) launches of each entry, by id.
  m.def("device_timer_event_counts", [] {
    EventRoute& r = events();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::vector<std::tuple<uint64_t, uint64_t, uint64_t>> counts;
    for (auto& e : r.entries) counts.emplace_back(e->timed.load(), e->captured.load(), e->untimed.load());
    return counts;
  });
  m.def("device_timer_event_launch", &eventLaunch, nb::arg("launcher"), nb::arg("launch"), nb::arg("args"),
        nb::arg("kwargs"));
}

#ifdef FLAGTREE_PROFILER_TESTING
namespace {

// The CPU stand-in: an event keeps the host time at its record, or the test's clock when set
// (a launch in between moves it: a known duration).
class HostEventDevice : public EventDevice {
 public:
  explicit HostEventDevice(RingDevice& ring) : ring_(ring) {}
  RingDevice::Where onDevice() override { return RingDevice::kYes; }
  bool capturing(uint64_t stream) override { return ring_.capturing(stream); }
  uint64_t create() override {
    std::lock_guard<std::mutex> lock(mutex_);
    times_[++next_] = 0;
    return next_;
  }
  void destroy(uint64_t event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    times_.erase(event);
  }
  bool record(uint64_t event, uint64_t) override {
    std::lock_guard<std::mutex> lock(mutex_);
    times_[event] = now();
    return true;
  }
  bool wait(uint64_t event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++waits;
    return times_.count(event) && times_[event];
  }
  bool elapsedNs(uint64_t from, uint64_t to, int64_t& ns) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ns = int64_t(times_[to]) - int64_t(times_[from]);
    return times_[from] && times_[to];
  }
  bool anchor(uint64_t event, uint64_t& hostNs, uint64_t& uncertaintyNs) override {
    std::lock_guard<std::mutex> lock(mutex_);
    hostNs = times_[event] = now();
    uncertaintyNs = 0;
    return true;
  }
  static std::atomic<uint64_t> clock;  // 0: the host's monotonic clock
  static std::atomic<uint64_t> waits;

 private:
  static uint64_t now() { return clock ? clock.load() : monotonicNs(); }
  RingDevice& ring_;
  std::mutex mutex_;
  std::map<uint64_t, uint64_t> times_;
  uint64_t next_ = 0;
};
std::atomic<uint64_t> HostEventDevice::clock{0};
std::atomic<uint64_t> HostEventDevice::waits{0};

}  // namespace

void registerEventLaunchTesting(nb::module_& testing) {
  events().hostDevice = [](RingDevice& ring) -> std::unique_ptr<EventDevice> {
    return std::make_unique<HostEventDevice>(ring);
  };
  // The stand-in events' clock: a value (ns), or 0 for the host's monotonic clock.
  testing.def("device_timer_host_event_clock", [](uint64_t ns) { HostEventDevice::clock = ns; });
  testing.def("device_timer_host_event_advance", [](uint64_t ns) { HostEventDevice::clock += ns; });
  testing.def("device_timer_host_event_waits", [] { return HostEventDevice::waits.load(); });
}
#else
void registerEventLaunchTesting(nb::module_&) {}
#endif  // FLAGTREE_PROFILER_TESTING

}  // namespace ftp
