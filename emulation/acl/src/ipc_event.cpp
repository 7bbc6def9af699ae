// SPDX-License-Identifier: Apache-2.0
// Events shared between processes (07_event_management.md):
// aclrtCreateEventExWithFlag(ACL_EVENT_IPC), aclrtIpcGetEventHandle,
// aclrtIpcOpenEventHandle, and such events in aclrtRecordEvent,
// aclrtStreamWaitEvent, aclrtSynchronizeEvent, aclrtQueryEventStatus and
// aclrtDestroyEvent.
//
// CANN's documented behaviour: ACL_EVENT_IPC is combined with no other flag;
// the creating process gets the event's handle, another process opens it and
// records and waits on it in its own streams, on the same device or another;
// such an event takes no reset, elapsed time, timestamp, id or wait-status
// query, and no part in a capture (ACL_ERROR_INVALID_PARAM here).
// The emulation's choices: the event's state is a POSIX shared-memory object
// (its name is in the handle) holding two counters: the records issued to it
// by any process and the last of them completed. A wait, a synchronize and a
// query look at the records issued when they are called; a never-recorded
// event is complete. The creator's aclrtDestroyEvent removes the name (no
// process opens the event afterwards); each process's mapping stays until
// its own tasks on the event are done. Waits poll the shared counter.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "detail/ipc_event.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

// What the processes share. Lock-free atomics are address-free, so two
// processes mapping the object at different addresses see one counter.
struct shared_state {
  std::atomic<std::uint64_t> issued;
  std::atomic<std::uint64_t> completed;
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "the shared counters must be lock-free");

constexpr char handle_magic[8] = {'k', 'e', 'e', 'l', 'i', 'p', 'c', 'e'};

// One process's mapping; the creator's also owns the name.
struct mapping {
  shared_state* state = nullptr;
  std::string name;
  bool creator = false;
  ~mapping() {
    if (state != nullptr) ::munmap(state, sizeof(shared_state));
  }
};

struct ipc_event {
  std::shared_ptr<mapping> map;  // the tasks in flight keep it mapped
};

struct ipc_books {
  std::mutex m;
  std::unordered_map<void*, std::unique_ptr<ipc_event>> events;
  std::uint64_t serial = 0;
};
ipc_books& ipc() {
  static auto* b = new ipc_books;  // as the other books: never destroyed
  return *b;
}

std::shared_ptr<mapping> map_of(aclrtEvent event, const char* api) {
  if (event == nullptr) throw_rule(errc::null_parameter, api, "event is null");
  ipc_books& b = ipc();
  std::lock_guard<std::mutex> lock(b.m);
  const auto it = b.events.find(event);
  if (it == b.events.end()) throw_rule(errc::invalid_handle, api, "event is not a live ACL_EVENT_IPC event");
  return it->second->map;
}

std::shared_ptr<mapping> map_shared(const std::string& name, bool create) {
  const int fd = ::shm_open(name.c_str(), create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR, 0600);
  if (fd < 0)
    throw_status(ACL_ERROR_INVALID_PARAM, create ? "cannot create the shared event " + name
                                                 : "no live IPC event has the handle's name " + name);
  auto map = std::make_shared<mapping>();
  map->name = name;
  map->creator = create;
  if (create && ::ftruncate(fd, sizeof(shared_state)) != 0) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    throw_status(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "cannot size the shared event " + name);
  }
  void* at = ::mmap(nullptr, sizeof(shared_state), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (at == MAP_FAILED) {
    if (create) ::shm_unlink(name.c_str());
    throw_status(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "cannot map the shared event " + name);
  }
  map->state = static_cast<shared_state*>(at);  // a new object is zero-filled: both counters 0
  return map;
}

aclrtEvent keep(std::shared_ptr<mapping> map) {
  auto e = std::make_unique<ipc_event>();
  e->map = std::move(map);
  void* handle = e.get();
  ipc_books& b = ipc();
  std::lock_guard<std::mutex> lock(b.m);
  b.events.emplace(handle, std::move(e));
  return handle;
}

bool complete(const shared_state& s, std::uint64_t target) noexcept {
  return s.completed.load(std::memory_order_acquire) >= target;
}

// Polls, backing off to short sleeps: the recorder may be another process.
void wait_until(const shared_state& s, std::uint64_t target) {
  for (unsigned spins = 0; !complete(s, target); ++spins) {
    if (spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

hb::stream_handle uncaptured_stream(aclrtStream stream, const char* api) {
  hb::stream_handle s = stream_of(stream, api);
  if (hb::capture_status(s).capture_id != 0)
    throw_status(ACL_ERROR_INVALID_PARAM, "an ACL_EVENT_IPC event takes no part in a capture");
  return s;
}

}  // namespace

bool is_ipc_event(aclrtEvent event) noexcept {
  if (event == nullptr) return false;
  ipc_books& b = ipc();
  std::lock_guard<std::mutex> lock(b.m);
  return b.events.count(event) != 0;
}

aclError create_ipc_event(aclrtEvent* event, std::uint32_t flag, const char* api) {
  return guarded(api, call::create_event, [&] {
    require(event, api, "event");
    if (flag != ACL_EVENT_IPC) throw_status(ACL_ERROR_INVALID_PARAM, "ACL_EVENT_IPC is combined with no other flag");
    std::uint64_t serial = 0;
    {
      std::lock_guard<std::mutex> lock(ipc().m);
      serial = ++ipc().serial;
    }
    const std::string name =
        "/keel_acl_ipc_event_" + std::to_string(::getpid()) + "_" + std::to_string(serial);
    *event = keep(map_shared(name, true));
  });
}

aclError destroy_ipc_event(aclrtEvent event) {
  static constexpr const char* api = "aclrtDestroyEvent";
  return guarded(api, call::other, [&] {
    std::shared_ptr<mapping> map = map_of(event, api);
    {
      ipc_books& b = ipc();
      std::lock_guard<std::mutex> lock(b.m);
      b.events.erase(event);
    }
    if (map->creator) ::shm_unlink(map->name.c_str());
  });
}

aclError record_ipc_event(aclrtEvent event, aclrtStream stream, const char* api) {
  return guarded(api, call::other, [&] {
    std::shared_ptr<mapping> map = map_of(event, api);
    hb::stream_handle s = uncaptured_stream(stream, api);
    // Issued now, completed in stream order; a record runs on a failed
    // stream too (so no waiter elsewhere hangs), as other event records do.
    const std::uint64_t mine = map->state->issued.fetch_add(1, std::memory_order_acq_rel) + 1;
    hb::launch_host(s, keel::host::detail::make_failure_aware([map, mine](bool) {
      std::atomic<std::uint64_t>& done = map->state->completed;
      std::uint64_t seen = done.load(std::memory_order_relaxed);
      while (seen < mine && !done.compare_exchange_weak(seen, mine, std::memory_order_acq_rel)) {
      }
    }));
  });
}

aclError wait_ipc_event(aclrtStream stream, aclrtEvent event, const char* api) {
  return guarded(api, call::other, [&] {
    std::shared_ptr<mapping> map = map_of(event, api);
    hb::stream_handle s = uncaptured_stream(stream, api);
    const std::uint64_t target = map->state->issued.load(std::memory_order_acquire);
    hb::launch_host(s, keel::host::detail::make_failure_aware([map, target](bool) { wait_until(*map->state, target); }));
  });
}

aclError synchronize_ipc_event(aclrtEvent event, const char* api) {
  return guarded(api, call::event_sync, [&] {
    std::shared_ptr<mapping> map = map_of(event, api);
    wait_until(*map->state, map->state->issued.load(std::memory_order_acquire));
  });
}

aclError query_ipc_event(aclrtEvent event, aclrtEventRecordedStatus* status, const char* api) {
  return guarded(api, call::other, [&] {
    require(status, api, "status");
    std::shared_ptr<mapping> map = map_of(event, api);
    *status = complete(*map->state, map->state->issued.load(std::memory_order_acquire))
                  ? ACL_EVENT_RECORDED_STATUS_COMPLETE
                  : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  });
}

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtIpcGetEventHandle(aclrtEvent event, aclrtIpcEventHandle* handle) {
  static constexpr const char* api = "aclrtIpcGetEventHandle";
  return guarded(api, call::other, [&] {
    require(handle, api, "handle");
    std::shared_ptr<mapping> map = map_of(event, api);
    if (!map->creator) throw_status(ACL_ERROR_INVALID_PARAM, "the event was opened from a handle, not created here");
    aclrtIpcEventHandle h{};
    std::memcpy(h.reserved, handle_magic, sizeof handle_magic);
    std::memcpy(h.reserved + sizeof handle_magic, map->name.c_str(), map->name.size() + 1);  // fits: see the name
    *handle = h;
  });
}

aclError aclrtIpcOpenEventHandle(aclrtIpcEventHandle handle, aclrtEvent* event) {
  static constexpr const char* api = "aclrtIpcOpenEventHandle";
  return guarded(api, call::create_event, [&] {
    require(event, api, "event");
    if (std::memcmp(handle.reserved, handle_magic, sizeof handle_magic) != 0)
      throw_status(ACL_ERROR_INVALID_PARAM, "the handle was not made by aclrtIpcGetEventHandle");
    const char* name = handle.reserved + sizeof handle_magic;
    const std::size_t room = sizeof handle.reserved - sizeof handle_magic;
    if (::memchr(name, '\0', room) == nullptr) throw_status(ACL_ERROR_INVALID_PARAM, "the handle's name is not terminated");
    *event = keep(map_shared(name, false));
  });
}

}  // extern "C"
