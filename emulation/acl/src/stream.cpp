// SPDX-License-Identifier: Apache-2.0
// Streams: creation and destruction (which ends the stream's callback
// subscription and discards a capture it began), the stream state callbacks
// told of both, abort, synchronization, queries and waits on events. Each
// aclrtStream is a host backend stream.
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "detail/capture_rules.hpp"
#include "detail/ipc_event.hpp"
#include "detail/overflow.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

hb::stream_handle stream_of(aclrtStream s, const char* function) {
  if (s == nullptr) throw_rule(errc::null_parameter, function, "stream is null (the emulation has no default stream)");
  std::lock_guard<std::mutex> lock(book().m);
  if (!book().streams.count(s)) throw_rule(errc::invalid_handle, function, "stream is not a live aclrtStream");
  return static_cast<hb::stream_handle>(s);
}

std::int32_t stream_device(hb::stream_handle s) noexcept { return device_id(hb::device_of(s)); }

hb::stream_handle current_device_stream(aclrtStream stream, const char* function) {
  hb::stream_handle s = stream_of(stream, function);
  const std::int32_t on = stream_device(s), current = this_thread_state().current_device;
  if (on != current)
    throw_status(ACL_ERROR_RT_STREAM_CONTEXT, "the stream is on device " + std::to_string(on) +
                                                  ", the calling thread's current device is " +
                                                  std::to_string(current));
  return s;
}

namespace {
// aclrtRegStreamStateCallback's registrations, by name, in registration order.
struct stream_state_callbacks {
  struct registration {
    std::string name;
    aclrtStreamStateCallback callback;
    void* args;
  };
  std::mutex m;
  std::vector<registration> registered;
};
stream_state_callbacks& state_callbacks() {
  static auto* c = new stream_state_callbacks;  // as the other books: never destroyed
  return *c;
}
// Tells every registered callback, outside the lock: a callback may register
// or unregister, or make and destroy streams of its own.
void tell_stream_state(aclrtStream stream, aclrtStreamState state) {
  std::vector<stream_state_callbacks::registration> told;
  {
    stream_state_callbacks& c = state_callbacks();
    std::lock_guard<std::mutex> lock(c.m);
    if (c.registered.empty()) return;
    told = c.registered;
  }
  for (const auto& r : told) r.callback(stream, state, r.args);
}

// The streams an aclrtStreamAbort is clearing, with how many aborts each.
struct abort_books {
  std::mutex m;
  std::unordered_map<aclrtStream, int> aborting;
};
abort_books& aborts() {
  static auto* a = new abort_books;  // as the other books: never destroyed
  return *a;
}
// CANN: a synchronize of a stream being aborted returns ACL_ERROR_RT_STREAM_ABORT.
void check_not_aborting(aclrtStream stream) {
  if (being_aborted(stream)) throw_status(ACL_ERROR_RT_STREAM_ABORT, "the stream is being aborted (aclrtStreamAbort)");
}

// aclrtDestroyStream(Force)'s work; throws what stream_of throws.
void destroy_stream_now(aclrtStream stream, const char* function, bool force) {
  hb::stream_handle s = stream_of(stream, function);
  tell_stream_state(stream, ACL_RT_STREAM_STATE_DESTROY_PRE);
  model_box* orphan = nullptr;
  {
    std::lock_guard<std::mutex> lock(book().m);
    book().streams.erase(stream);
    book().stream_context.erase(stream);
    book().stream_configs.erase(stream);
    for (auto it = book().default_streams.begin(); it != book().default_streams.end(); ++it)
      if (it->second == stream) {
        book().default_streams.erase(it);
        break;
      }
    auto it = book().capturing.find(s);
    if (it != book().capturing.end()) {
      orphan = it->second;
      book().models.erase(orphan);
      for (auto g : orphan->groups) book().groups.erase(g);
      book().capturing.erase(it);
    }
  }
  // Both discard a capture in progress (reported through keel's error
  // handler); the forced one skips the work not yet started (callbacks
  // still reach their subscribed thread, which drops them: the stream is gone).
  if (force) {
    hb::destroy_stream_force(s);
  } else {
    hb::destroy_stream(s);
  }
  cann_rules::note_stream_destroyed(stream);
  forget_subscription(stream);  // after its work: a blocking callback still ran on the subscribed thread
  forget_overflow_switch(stream);
  if (orphan != nullptr) {
    for (auto g : orphan->groups) {
      cann_rules::note_group_destroyed(g);
      hb::destroy_group(g);
    }
    delete orphan;
  }
}
}  // namespace

aclError destroy_stream_checked(aclrtStream stream, const char* function, bool force) {
  return guarded(function, call::other, [&] { destroy_stream_now(stream, function, force); });
}

namespace {
aclError create_stream(aclrtStream* stream, const char* function, const books::stream_config& config) {
  return guarded(function, call::other, [&] {
    require(stream, function, "stream");
    // ACL_STREAM_PERSISTENT: a model can be built on it (built_model.cpp).
    hb::stream_handle s = (config.flags & ACL_STREAM_PERSISTENT) != 0 ? hb::create_persistent_stream(dev())
                                                                      : hb::create_stream(dev());
    try {
      // The stream's worker (one thread for the stream's life) learns which
      // stream it runs: a replayed callback goes to the executing stream.
      hb::launch_host(s, [s] { worker_stream() = s; });
      std::lock_guard<std::mutex> lock(book().m);
      book().streams.insert(s);
      try {
        book().stream_context[s] = this_thread_state().current_context;
        book().stream_configs[s] = config;
      } catch (...) {
        book().streams.erase(s);
        book().stream_context.erase(s);
        throw;
      }
    } catch (...) {
      hb::destroy_stream(s);
      throw;
    }
    *stream = s;
    tell_stream_state(s, ACL_RT_STREAM_STATE_CREATE_POST);
  });
}

// The stream configuration a handle (aclrtCreateStreamConfigHandle) holds.
bool valid_priority(std::uint32_t priority) noexcept;
std::uint32_t known_flags(std::uint32_t flag) noexcept;

books::stream_config config_of(aclrtStream stream, const char* function) {
  stream_of(stream, function);
  std::lock_guard<std::mutex> lock(book().m);
  const auto it = book().stream_configs.find(stream);
  return it == book().stream_configs.end() ? books::stream_config{} : it->second;
}
// The emulated device's lowest stream priority (0 is the highest), as CANN's devices report.
constexpr std::uint32_t kLeastStreamPriority = 7;

bool valid_priority(std::uint32_t priority) noexcept { return priority <= kLeastStreamPriority; }

// CANN: a flag value other than the documented ones makes a plain stream.
std::uint32_t known_flags(std::uint32_t flag) noexcept {
  const std::uint32_t known = ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC | ACL_STREAM_PERSISTENT | ACL_STREAM_HUGE |
                              ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY;
  return (flag & ~known) != 0 ? 0 : flag;
}
}  // namespace

bool being_aborted(aclrtStream stream) {
  std::lock_guard<std::mutex> lock(aborts().m);
  return aborts().aborting.count(stream) != 0;
}

bool stops_on_failure(aclrtStream stream) {
  std::lock_guard<std::mutex> lock(book().m);
  const auto it = book().stream_context.find(stream);
  return it != book().stream_context.end() && book().stop_on_failure.count(it->second) != 0;
}

void drop_default_stream(aclrtContext context) {
  aclrtStream gone = nullptr;
  {
    std::lock_guard<std::mutex> lock(book().m);
    const auto it = book().default_streams.find(context);
    if (it == book().default_streams.end()) return;
    gone = it->second;
    book().default_streams.erase(it);
  }
  // As aclrtDestroyStream, from whichever thread destroys the context (it
  // needs no context of its own). The books held the stream, so it is live;
  // what the host backend may still throw is reported through keel's
  // error handler, as for a stream destroyed in a destructor.
  try {
    destroy_stream_now(gone, "aclrtDestroyContext", false);
  } catch (...) {
    keel::report_current_exception("aclrtDestroyContext");
  }
}

aclrtStream stream_or_default(aclrtStream s, const char* function) {
  if (s != nullptr) return s;
  const aclrtContext context = this_thread_state().current_context;
  {
    std::lock_guard<std::mutex> lock(book().m);
    const auto it = book().default_streams.find(context);
    if (it != book().default_streams.end()) return it->second;
  }
  aclrtStream made = nullptr;
  const aclError st = create_stream(&made, function, {});
  if (st != ACL_SUCCESS) throw_status(st, std::string("the context's default stream could not be made"));
  std::unique_lock<std::mutex> lock(book().m);
  const auto placed = book().default_streams.emplace(context, made);
  if (!placed.second) {  // another thread made it first: keep theirs
    lock.unlock();
    tell_stream_state(made, ACL_RT_STREAM_STATE_DESTROY_PRE);  // its callbacks were told it was made
    lock.lock();
    book().streams.erase(made);
    book().stream_context.erase(made);
    book().stream_configs.erase(made);
    hb::destroy_stream(static_cast<hb::stream_handle>(made));
  }
  return placed.first->second;
}

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

namespace {
// A plain wait, in the emulation's capture books too: an ACL_EVENT_EXTERNAL
// event's wait is a task of the stream; on any other event a capturing
// stream waits only on its own capture's records (cann_rules::check_wait),
// and the wait forks or joins (cann_rules::note_wait).
void wait_with_rules(aclrtStream stream, hb::stream_handle s, aclrtEvent event, hb::event_handle e) {
  cann_rules::check_issue(stream);
  if (hb::flags_of(e) == keel::event_flags::external) {
    hb::wait(s, e);
    cann_rules::note_task(stream);
    return;
  }
  cann_rules::check_wait(stream, event);
  hb::wait(s, e);
  cann_rules::note_wait(stream, event);
}
}  // namespace

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) { return create_stream(stream, "aclrtCreateStream", {}); }
// Priority and flags tune a device's hardware queues; the host runs every
// stream alike, and remembers both for aclrtStreamGetPriority / GetFlags.
aclError aclrtCreateStreamWithConfig(aclrtStream* stream, std::uint32_t priority, std::uint32_t flag) {
  static constexpr const char* api = "aclrtCreateStreamWithConfig";
  if (!valid_priority(priority)) {
    if (!has_context()) return no_context(api);
    return fail(ACL_ERROR_INVALID_PARAM, api,
                "priority " + std::to_string(priority) + " is outside [0, 7] (aclrtDeviceGetStreamPriorityRange)");
  }
  return create_stream(stream, api, books::stream_config{known_flags(flag), priority});
}

// CANN (06_stream_management.md): ACL_CONTINUE_ON_FAILURE (the default) runs
// the tasks after a failed one, ACL_STOP_ON_FAILURE runs none of them, for
// every stream of the stream's context; the mode is set once per stream.
aclError aclrtSetStreamFailureMode(aclrtStream stream, std::uint64_t mode) {
  static constexpr const char* api = "aclrtSetStreamFailureMode";
  return guarded(api, call::other, [&] {
    stream_of(stream, api);
    if (mode != ACL_CONTINUE_ON_FAILURE && mode != ACL_STOP_ON_FAILURE)
      throw_status(ACL_ERROR_INVALID_PARAM, "mode must be ACL_CONTINUE_ON_FAILURE or ACL_STOP_ON_FAILURE");
    std::lock_guard<std::mutex> lock(book().m);
    books::stream_config& config = book().stream_configs[stream];
    if (config.failure_mode_set) throw_status(ACL_ERROR_INVALID_PARAM, "the stream's failure mode is already set");
    if (mode == ACL_STOP_ON_FAILURE) book().stop_on_failure.insert(book().stream_context[stream]);
    config.failure_mode_set = true;
  });
}

// ---- stream config handles: aclrtCreateStreamWithConfig's settings, one by one ----

aclrtStreamConfigHandle* aclrtCreateStreamConfigHandle(void) {
  return new (std::nothrow) aclrtStreamConfigHandle{nullptr, 0, 0, 0};
}
aclError aclrtDestroyStreamConfigHandle(aclrtStreamConfigHandle* handle) {
  if (handle == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStreamConfigHandle", "handle is null");
  delete handle;
  return ACL_SUCCESS;
}
aclError aclrtSetStreamConfigOpt(aclrtStreamConfigHandle* handle, aclrtStreamConfigAttr attr, const void* attrValue,
                                 std::size_t valueSize) {
  static constexpr const char* api = "aclrtSetStreamConfigOpt";
  if (handle == nullptr || attrValue == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "a pointer is null");
  switch (raw(attr)) {
    case ACL_RT_STREAM_WORK_ADDR_PTR:
      if (valueSize != sizeof(void*)) break;
      std::memcpy(&handle->workptr, attrValue, sizeof(void*));
      return ACL_SUCCESS;
    case ACL_RT_STREAM_WORK_SIZE:
      if (valueSize != sizeof(std::size_t)) break;
      std::memcpy(&handle->workSize, attrValue, sizeof(std::size_t));
      return ACL_SUCCESS;
    case ACL_RT_STREAM_FLAG: {
      std::uint32_t flag = 0;
      if (valueSize != sizeof flag) break;
      std::memcpy(&flag, attrValue, sizeof flag);
      handle->flag = flag;
      return ACL_SUCCESS;
    }
    case ACL_RT_STREAM_PRIORITY: {
      std::uint32_t priority = 0;
      if (valueSize != sizeof priority) break;
      std::memcpy(&priority, attrValue, sizeof priority);
      if (!valid_priority(priority))
        return fail(ACL_ERROR_INVALID_PARAM, api,
                    "priority " + std::to_string(priority) + " is outside [0, 7] (aclrtDeviceGetStreamPriorityRange)");
      handle->priority = priority;
      return ACL_SUCCESS;
    }
    default: return fail(ACL_ERROR_INVALID_PARAM, api, "unknown aclrtStreamConfigAttr " + std::to_string(raw(attr)));
  }
  return fail(ACL_ERROR_INVALID_PARAM, api,
              "valueSize " + std::to_string(valueSize) + " is not the size of attribute " + std::to_string(raw(attr)));
}
// The work memory a model stream may be given is the device's own business on
// the host: the emulation keeps flag and priority, as aclrtCreateStreamWithConfig does.
aclError aclrtCreateStreamV2(aclrtStream* stream, const aclrtStreamConfigHandle* handle) {
  static constexpr const char* api = "aclrtCreateStreamV2";
  if (handle == nullptr) {
    if (!has_context()) return no_context(api);
    return fail(ACL_ERROR_INVALID_PARAM, api, "handle is null");
  }
  return create_stream(stream, api,
                       books::stream_config{known_flags(static_cast<std::uint32_t>(handle->flag)), handle->priority});
}

// ---- the context's default stream ----

aclError aclrtCtxGetCurrentDefaultStream(aclrtStream* stream) {
  static constexpr const char* api = "aclrtCtxGetCurrentDefaultStream";
  return guarded(api, call::other, [&] {
    require(stream, api, "stream");
    *stream = stream_or_default(nullptr, api);
  });
}
aclError aclrtDestroyStream(aclrtStream stream) { return destroy_stream_checked(stream, "aclrtDestroyStream", false); }
aclError aclrtDestroyStreamForce(aclrtStream stream) {
  return destroy_stream_checked(stream, "aclrtDestroyStreamForce", true);
}
aclError aclrtStreamGetId(aclrtStream stream, std::int32_t* streamId) {
  static constexpr const char* api = "aclrtStreamGetId";
  return guarded(api, call::other, [&] {
    require(streamId, api, "streamId");
    *streamId = static_cast<std::int32_t>(hb::id_of(stream_of(stream, api)));
  });
}
aclError aclrtStreamGetFlags(aclrtStream stream, std::uint32_t* flags) {
  static constexpr const char* api = "aclrtStreamGetFlags";
  return guarded(api, call::other, [&] {
    require(flags, api, "flags");
    *flags = config_of(stream, api).flags;
  });
}
aclError aclrtStreamGetPriority(aclrtStream stream, std::uint32_t* priority) {
  static constexpr const char* api = "aclrtStreamGetPriority";
  return guarded(api, call::other, [&] {
    require(priority, api, "priority");
    *priority = config_of(stream, api).priority;
  });
}
aclError aclrtDeviceGetStreamPriorityRange(std::int32_t* leastPriority, std::int32_t* greatestPriority) {
  static constexpr const char* api = "aclrtDeviceGetStreamPriorityRange";
  return guarded(api, call::other, [&] {
    require(leastPriority, api, "leastPriority");
    require(greatestPriority, api, "greatestPriority");
    *leastPriority = static_cast<std::int32_t>(kLeastStreamPriority);
    *greatestPriority = 0;
  });
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  return guarded("aclrtSynchronizeStream", call::other, [&] {
    hb::stream_handle s = stream_of(stream, "aclrtSynchronizeStream");
    check_not_aborting(stream);
    cann_rules::check_unsafe_stream(stream, this_thread_state().capture_mode);
    hb::synchronize(s);
  });
}
aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, std::int32_t timeout) {
  static constexpr const char* api = "aclrtSynchronizeStreamWithTimeout";
  return guarded(api, call::stream_sync, [&] {
    hb::stream_handle s = stream_of(stream, api);
    check_not_aborting(stream);
    cann_rules::check_unsafe_stream(stream, this_thread_state().capture_mode);
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      hb::synchronize_for(s, budget);
    } else {
      hb::synchronize(s);
    }
  });
}
aclError aclrtStreamWaitEventWithTimeout(aclrtStream stream, aclrtEvent event, std::int32_t timeout) {
  static constexpr const char* api = "aclrtStreamWaitEventWithTimeout";
  return guarded(api, call::other, [&] {
    hb::stream_handle s = stream_of(stream, api);
    hb::event_handle e = event_of(event, api);
    require_event_on_stream_device(e, s);
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      hb::wait_for(s, e, budget);
    } else {
      wait_with_rules(stream, s, event, e);
    }
  });
}
// CANN: the stream's running task stops and its tasks not yet run are
// discarded; tasks issued meanwhile take no effect. The host cannot stop a
// task midway: the running one finishes, and the worker skips the rest
// (control tasks, such as event records, still take effect, so no waiter
// elsewhere hangs). The stream is then empty, without an error state, and
// takes new work. A stream bound to a model (aclmdlRIBindStream) is refused.
aclError aclrtStreamAbort(aclrtStream stream) {
  static constexpr const char* api = "aclrtStreamAbort";
  return guarded(api, call::other, [&] {
    if (stream == nullptr) throw_status(ACL_ERROR_INVALID_PARAM, "stream is null (the default stream cannot be aborted)");
    hb::stream_handle s = stream_of(stream, api);
    if (s->bound != nullptr)
      throw_status(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "the stream is bound to a model run instance (aclmdlRIBindStream)");
    {
      std::lock_guard<std::mutex> lock(aborts().m);
      ++aborts().aborting[stream];
    }
    struct unmark {
      aclrtStream stream;
      ~unmark() {
        std::lock_guard<std::mutex> lock(aborts().m);
        auto it = aborts().aborting.find(stream);
        if (--it->second == 0) aborts().aborting.erase(it);
      }
    } done{stream};
    // The discard is a failure nobody is told about: the exception callbacks
    // hear of failed tasks only.
    s->record_failure(std::make_exception_ptr(keel::error(errc::task_failed, api, "the stream was aborted")));
    try {
      hb::synchronize(s);
    } catch (const keel::error& e) {
      // The drain reports the discard (or a failure before it, discarded too)
      // and clears the error state; anything else is the caller's to hear.
      if (e.code() != keel::make_error_code(errc::task_failed)) throw;
    }
  });
}

aclError aclrtRegStreamStateCallback(const char* regName, aclrtStreamStateCallback callback, void* args) {
  static constexpr const char* api = "aclrtRegStreamStateCallback";
  if (regName == nullptr || *regName == '\0') return fail(ACL_ERROR_INVALID_PARAM, api, "regName is null or empty");
  stream_state_callbacks& c = state_callbacks();
  std::lock_guard<std::mutex> lock(c.m);
  auto it = c.registered.begin();
  while (it != c.registered.end() && it->name != regName) ++it;
  if (callback == nullptr) {  // unregisters (a name not registered: nothing to do)
    if (it != c.registered.end()) c.registered.erase(it);
    return ACL_SUCCESS;
  }
  if (it != c.registered.end())
    return fail(ACL_ERROR_INVALID_PARAM, api,
                std::string("a callback is already registered as \"") + regName + "\" (unregister it first)");
  try {
    c.registered.push_back({regName, callback, args});
  } catch (const std::bad_alloc&) {
    return fail(ACL_ERROR_BAD_ALLOC, api, "out of host memory");
  }
  return ACL_SUCCESS;
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus* status) {
  return guarded("aclrtStreamQuery", call::other, [&] {
    require(status, "aclrtStreamQuery", "status");
    *status = hb::query(stream_of(stream, "aclrtStreamQuery")) ? ACL_STREAM_STATUS_COMPLETE
                                                                : ACL_STREAM_STATUS_NOT_READY;
  });
}
aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  if (is_ipc_event(event)) return wait_ipc_event(stream, event, "aclrtStreamWaitEvent");
  return guarded("aclrtStreamWaitEvent", call::other, [&] {
    hb::stream_handle s = stream_of(stream, "aclrtStreamWaitEvent");
    hb::event_handle e = event_of(event, "aclrtStreamWaitEvent");
    require_event_on_stream_device(e, s);
    wait_with_rules(stream, s, event, e);
  });
}
aclError aclrtStreamWaitEventWithFlag(aclrtStream stream, aclrtEvent event, std::uint32_t timeout, std::uint32_t flag) {
  static constexpr const char* api = "aclrtStreamWaitEventWithFlag";
  return guarded(api, call::other, [&] {
    hb::stream_handle s = stream_of(stream, api);
    hb::event_handle e = event_of(event, api);
    require_event_on_stream_device(e, s);
    if (flag != ACL_EVENT_WAIT_DEFAULT && flag != ACL_EVENT_WAIT_EXTERNAL)
      throw_rule(errc::invalid_parameter, api, "flag must be ACL_EVENT_WAIT_DEFAULT or ACL_EVENT_WAIT_EXTERNAL");
    if (flag == ACL_EVENT_WAIT_DEFAULT) return wait_with_rules(stream, s, event, e);
    // CANN documents timeout 0 (never times out) with the external flag; its
    // own sample passes -1 (UINT32_MAX as uint32_t), which means the same.
    if (timeout != 0 && timeout != UINT32_MAX)
      throw_rule(errc::invalid_parameter, api, "ACL_EVENT_WAIT_EXTERNAL takes timeout 0 (no timeout)");
    // An ACL_EVENT_EXTERNAL event's wait blocks until its signal; on an
    // ACL_EVENT_SYNC event of aclrtCreateEventExWithFlag it is a model's wait
    // on a record made outside the model (capture only).
    if (hb::flags_of(e) == keel::event_flags::external) return wait_with_rules(stream, s, event, e);
    require_ex_sync_event(event, api);
    cann_rules::check_issue(stream);
    hb::wait_external(s, e);
    cann_rules::note_task(stream);
  });
}

}  // extern "C"
