// SPDX-License-Identifier: Apache-2.0
// The emulation's internal state, shared by its translation units (one per
// concept: device, stream, callback, event, memory, model, aclnn objects,
// aclnn operators, status): the host device, the calling thread's state, the
// live-handle books, the status mapping and the `guarded` wrapper every C
// entry point runs its body in. Nothing here is exported: the library is
// built with hidden visibility and only ACL_FUNC_VISIBILITY names (the C API)
// leave it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "keel/host/host.hpp"

namespace keel::acl_emulation::detail {

using hb = keel::host::backend;
using keel::errc;

// ---- the emulated devices (device.cpp) ------------------------------------

// The most devices KEEL_ACL_EMULATION_DEVICES may ask for.
constexpr std::int32_t max_devices = 64;

// How many devices the emulation has: KEEL_ACL_EMULATION_DEVICES (1 to
// max_devices), read once, at the first call that needs it; 1 if unset or not
// a number in that range.
std::int32_t device_count() noexcept;
inline bool valid_device(std::int32_t id) noexcept { return id >= 0 && id < device_count(); }

// The emulated runtime's state is never destroyed: its clients may still call
// it from their own static destructors at exit (a keel::acl::device held in a
// function-local static frees what is still released in stream order), and
// the order in which statics of different libraries are destroyed is not
// theirs to choose. Reachable to the end, so no leak checker reports it.
// Each emulated device is a host device of its own, made at its first use.
keel::host::device& dev(std::int32_t id);
// The calling thread's current device (aclrtSetDevice, aclrtSetCurrentContext).
keel::host::device& dev();
// The emulated device id a host device stands for (-1: none of them).
std::int32_t device_id(const keel::host::device& d) noexcept;
// Each device's memory size in bytes: KEEL_ACL_EMULATION_DEVICE_MEMORY if set
// (a positive number), else the host's physical memory.
std::size_t device_memory_size() noexcept;
// ACL_ERROR_RT_INVALID_DEVICEID for an id outside [0, device_count()).
aclError invalid_device(const char* function, std::int32_t id);
// Peer access (aclrtDeviceEnablePeerAccess): `peer` must be another valid device.
void check_peer(const char* function, std::int32_t self, std::int32_t peer);
bool peer_enabled(std::int32_t from, std::int32_t to);

// A CANN status the emulation decides itself (not a keel rule's mapping):
// `guarded` reports it as it is.
struct status_error : std::exception {
  status_error(aclError c, std::string t) : code(c), text(std::move(t)) {}
  const char* what() const noexcept override { return text.c_str(); }
  aclError code;
  std::string text;
};
[[noreturn]] inline void throw_status(aclError code, std::string text) { throw status_error(code, std::move(text)); }

// ---- the calling thread (status.cpp) ----------------------------------------

// Per-thread state (aclGetRecentErrMsg's text, aclrtSetDevice's binding)
// lives under a pthread key rather than in C++ thread_local: a dlopen-ed
// library's dynamic TLS is what current sanitizers' leak checker mis-reads.
struct thread_state {
  std::string recent_error;
  bool has_recent_error = false;
  std::int32_t current_device = -1;
  aclError last_runtime_error = ACL_SUCCESS;  // aclrtPeekAtLastError / aclrtGetLastError
  int capture_mode = ACL_MODEL_RI_CAPTURE_MODE_GLOBAL;  // aclmdlRICaptureThreadExchangeMode
  // aclrtSetCurrentContext's binding (context.cpp): the device's default
  // context (aclrtSetDevice) or one aclrtCreateContext made; the default one
  // holds only while the device was not reset by force since (`generation`).
  aclrtContext current_context = nullptr;
  std::uint64_t generation = 0;
};
thread_state& this_thread_state();

// A failure: the thread's aclGetRecentErrMsg text, and, for a runtime
// status (not an aclnn one, 1x1xxx-5x1xxx), the thread's last runtime error.
aclError fail(aclError code, const char* function, const std::string& text);

// What kind of call failed: some keel conditions have a call-specific status
// (a timeout is 507046 for a stream or device synchronize, 507047 for an
// event's, 107019 for a wait); `nn` is an aclnn call (ACLNN_* statuses).
enum class call { other, capture_begin, capture_end, group, update_end, create_event, stream_sync, event_sync, nn };

// The ACL status for a rule the host backend reported. `c` refines the
// general choice where CANN documents a more specific code for that call.
aclError code_for(errc e, call c);

// The CANN symbol of a status code_for() can give a runtime rule.
const char* status_symbol(aclError code);

// CANN's rule: aclrtSetDevice "specifies the Device used for computation in
// the current thread" and implicitly creates its default context; a runtime
// call on a thread with no current context fails with
// ACL_ERROR_RT_CONTEXT_NULL (107002). Both in status.cpp.
bool has_context() noexcept;
aclError no_context(const char* function);

[[noreturn]] void throw_rule(errc e, const char* function, std::string text);

template <class T>
void require(const T* p, const char* function, const char* name) {
  if (p == nullptr) throw_rule(errc::null_parameter, function, std::string(name) + " is null");
}

// Runs body, turning what it throws into the ACL status and the thread's
// message. Runtime calls (not the aclnn object calls) first need the thread's context.
template <class F>
aclError guarded(const char* function, call c, F&& body) noexcept {
  if (c != call::nn && !has_context()) return no_context(function);
  try {
    body();
    return ACL_SUCCESS;
  } catch (const status_error& e) {
    if (c == call::nn) {  // a runtime status inside an operator's launch, as below
      fail(e.code, function, std::string("the runtime failed with ") + status_symbol(e.code) + " (" +
                                 std::to_string(e.code) + "): " + e.text);
      return ACLNN_ERR_RUNTIME_ERROR;
    }
    return fail(e.code, function, e.text);
  } catch (const keel::error& e) {
    const bool ours = e.code().category() == keel::keel_category();
    const aclError code = ours ? code_for(static_cast<errc>(e.code().value()), c)
                               : (c == call::nn ? ACLNN_ERR_INNER : ACL_ERROR_RT_INTERNAL_ERROR);
    if (c == call::nn && code == ACLNN_ERR_RUNTIME_ERROR) {
      // The operator's call into the runtime failed: the runtime sets the
      // thread's last error (and its text) as for a direct call, and the
      // operator reports 361001 over it.
      const aclError runtime = code_for(static_cast<errc>(e.code().value()), call::other);
      fail(runtime, function, std::string("the runtime failed with ") + status_symbol(runtime) + " (" +
                                  std::to_string(runtime) + "): " + e.what());
      return code;
    }
    return fail(code, function, e.what());
  } catch (const std::bad_alloc&) {
    return fail(c == call::nn ? ACLNN_ERR_INNER : ACL_ERROR_BAD_ALLOC, function, "out of host memory");
  } catch (const std::exception& e) {
    return fail(c == call::nn ? ACLNN_ERR_INNER : ACL_ERROR_RT_INTERNAL_ERROR, function, e.what());
  } catch (...) {
    return fail(c == call::nn ? ACLNN_ERR_INNER : ACL_ERROR_RT_INTERNAL_ERROR, function, "unknown exception");
  }
}

// A C caller may pass any int where CANN takes an enum; C++ may not load an
// out-of-range value as the enum type, so the emulation reads the bits.
template <class Enum>
int raw(const Enum& value) noexcept {
  int bits = 0;
  std::memcpy(&bits, &value, sizeof bits < sizeof value ? sizeof bits : sizeof value);
  return bits;
}

// A CANN timeout (milliseconds, -1 forever) as keel's wait budget; false for
// -1. Other negative values are invalid (device.cpp).
bool bounded(std::int32_t timeout, const char* function, std::chrono::microseconds& budget);

// ---- live handles (books in device.cpp, lookups in each concept's file) -----

struct model_query;  // model_query.cpp: the model's streams and tasks as aclmdlRI handles
struct model_box {
  hb::model_handle model = nullptr;  // null while its capture is in progress
  std::vector<hb::group_handle> groups;
  bool built = false;     // made by aclmdlRIBuildBegin (built_model.cpp)
  bool building = false;  // ... and aclmdlRIBuildEnd has not ended its build
  bool body = false;      // a conditional body (conditional.cpp): its parent destroys it
  std::vector<model_box*> bodies;  // the conditional bodies it owns
  std::uint32_t id = next_model_id();     // aclmdlRIGetId, from capture begin on
  std::shared_ptr<model_query> query;     // built at the first aclmdlRIGetStreams
  static std::uint32_t next_model_id() noexcept;  // model_query.cpp
};

struct books {
  std::mutex m;
  std::unordered_set<void*> streams, events, groups;
  // The events aclrtCreateEventExWithFlag made: only they take the external
  // record and wait operations on an ACL_EVENT_SYNC event (event.cpp).
  std::unordered_set<void*> ex_events;
  std::unordered_set<model_box*> models;
  std::unordered_map<hb::stream_handle, model_box*> capturing;  // origin stream → its model-to-be
  // aclrtMalloc's allocations by address (a copy's pointers may point inside
  // one: the device they are on decides the cross-device rules), and
  // aclrtMallocHost's.
  struct device_allocation {
    std::size_t size = 0;
    std::int32_t device = 0;
  };
  std::map<std::uintptr_t, device_allocation> device_memory;
  std::unordered_map<void*, std::size_t> host_memory;
  bool initialized = false;
  // Contexts (context.cpp): the live ones aclrtCreateContext made, the
  // context each stream was made in, and per device how many aclrtSetDevice
  // calls aclrtResetDevice(Force) has not undone and the default context's
  // generation (aclrtResetDeviceForce starts a new one); per device too, the
  // bytes aclrtMalloc holds on it and the peers it may access
  // (aclrtDeviceEnablePeerAccess, one direction each).
  std::unordered_set<aclrtContext> contexts;
  std::unordered_map<void*, aclrtContext> stream_context;
  // aclrtCreateStreamWithConfig's flags and priority (stream.cpp).
  struct stream_config {
    std::uint32_t flags = 0, priority = 0;
    bool failure_mode_set = false;  // aclrtSetStreamFailureMode, once per stream
  };
  std::unordered_map<void*, stream_config> stream_configs;
  // The contexts whose streams stop on failure (ACL_STOP_ON_FAILURE on one
  // of their streams, aclrtSetStreamFailureMode: stream.cpp).
  std::unordered_set<aclrtContext> stop_on_failure;
  // Each context's default stream, made at its first use (stream.cpp).
  std::unordered_map<aclrtContext, aclrtStream> default_streams;
  struct device_book {
    std::uint64_t set_count = 0;
    std::atomic<std::uint64_t> generation{1};
    std::size_t memory_in_use = 0;
    bool peer_access[max_devices] = {};
  };
  device_book devices[max_devices];
};
books& book();  // never destroyed, as dev()

// A device's default context (aclrtSetDevice binds it), and the calling
// thread's binding to it or another (context.cpp).
aclrtContext default_context(std::int32_t device) noexcept;
bool is_default_context(aclrtContext context) noexcept;
std::int32_t context_device(aclrtContext context) noexcept;
void bind_default_context(std::int32_t device);
void unbind_context() noexcept;
// Destroys a stream as aclrtDestroyStream does, or discarding its work (stream.cpp).
aclError destroy_stream_checked(aclrtStream stream, const char* function, bool force);
// A destroyed context's default stream goes with it (stream.cpp).
void drop_default_stream(aclrtContext context);

hb::stream_handle stream_of(aclrtStream s, const char* function);  // stream.cpp
// The emulated device a live stream / event belongs to.
std::int32_t stream_device(hb::stream_handle s) noexcept;  // stream.cpp
std::int32_t event_device(hb::event_handle e) noexcept;    // event.cpp
// CANN's multi-device rule: work goes only to a stream of the calling
// thread's current device (ACL_ERROR_RT_STREAM_CONTEXT otherwise).
hb::stream_handle current_device_stream(aclrtStream s, const char* function);  // stream.cpp
// A null stream where CANN takes one for the default stream: the current
// context's default stream (made at its first use).
aclrtStream stream_or_default(aclrtStream s, const char* function);  // stream.cpp
// ... and an event records / is waited on by streams of its own device only
// (ACL_ERROR_RT_STREAM_CONTEXT otherwise).
void require_event_on_stream_device(hb::event_handle e, hb::stream_handle s);  // event.cpp
hb::event_handle event_of(aclrtEvent e, const char* function);     // event.cpp
// An event an external operation (ACL_EVENT_RECORD_EXTERNAL / ACL_EVENT_WAIT_EXTERNAL)
// may take as a default event: one aclrtCreateEventExWithFlag made with ACL_EVENT_SYNC (event.cpp).
void require_ex_sync_event(aclrtEvent e, const char* function);

// Whether the stream's context stops on failure (ACL_STOP_ON_FAILURE): a
// failed stream then runs none of its later tasks, host callbacks and host
// functions included (stream.cpp).
bool stops_on_failure(aclrtStream stream);
// Whether an aclrtStreamAbort is clearing the stream: its host callbacks and
// host functions are discarded with its other tasks (stream.cpp).
bool being_aborted(aclrtStream stream);

// ---- host callbacks (callback.cpp) ------------------------------------------

// On a stream's worker thread: the aclrtStream it runs (set by the stream's
// first task, aclrtCreateStream); null on any other thread.
aclrtStream& worker_stream() noexcept;

// The stream is destroyed: its subscription ends and its callbacks not yet
// taken by the subscribed thread are dropped.
void forget_subscription(aclrtStream stream);

}  // namespace keel::acl_emulation::detail
