// SPDX-License-Identifier: Apache-2.0
// Streams: creation and destruction (which ends the stream's callback
// subscription and discards a capture it began), synchronization, queries
// and waits on events. Each aclrtStream is a host backend stream.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

hb::stream_handle stream_of(aclrtStream s, const char* function) {
  if (s == nullptr) throw_rule(errc::null_parameter, function, "stream is null (the emulation has no default stream)");
  std::lock_guard<std::mutex> lock(book().m);
  if (!book().streams.count(s)) throw_rule(errc::invalid_handle, function, "stream is not a live aclrtStream");
  return static_cast<hb::stream_handle>(s);
}

aclError destroy_stream_checked(aclrtStream stream, const char* function, bool force) {
  return guarded(function, call::other, [&] {
    hb::stream_handle s = stream_of(stream, function);
    model_box* orphan = nullptr;
    {
      std::lock_guard<std::mutex> lock(book().m);
      book().streams.erase(stream);
      book().stream_context.erase(stream);
      book().stream_configs.erase(stream);
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
    forget_subscription(stream);  // after its work: a blocking callback still ran on the subscribed thread
    if (orphan != nullptr) {
      for (auto g : orphan->groups) hb::destroy_group(g);
      delete orphan;
    }
  });
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
  });
}

books::stream_config config_of(aclrtStream stream, const char* function) {
  stream_of(stream, function);
  std::lock_guard<std::mutex> lock(book().m);
  const auto it = book().stream_configs.find(stream);
  return it == book().stream_configs.end() ? books::stream_config{} : it->second;
}
}  // namespace

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

namespace {
// The emulated device's lowest stream priority (0 is the highest), as CANN's devices report.
constexpr std::uint32_t kLeastStreamPriority = 7;
}  // namespace

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) { return create_stream(stream, "aclrtCreateStream", {}); }
// Priority and flags tune a device's hardware queues; the host runs every
// stream alike, and remembers both for aclrtStreamGetPriority / GetFlags.
aclError aclrtCreateStreamWithConfig(aclrtStream* stream, std::uint32_t priority, std::uint32_t flag) {
  static constexpr const char* api = "aclrtCreateStreamWithConfig";
  if (priority > kLeastStreamPriority) {
    if (!has_context()) return no_context(api);
    return fail(ACL_ERROR_INVALID_PARAM, api,
                "priority " + std::to_string(priority) + " is outside [0, 7] (aclrtDeviceGetStreamPriorityRange)");
  }
  // CANN: a flag value other than the documented ones makes a plain stream.
  const std::uint32_t known = ACL_STREAM_FAST_LAUNCH | ACL_STREAM_FAST_SYNC | ACL_STREAM_PERSISTENT | ACL_STREAM_HUGE |
                              ACL_STREAM_CPU_SCHEDULE | ACL_STREAM_DEVICE_USE_ONLY;
  const std::uint32_t flags = (flag & ~known) != 0 ? 0 : flag;
  return create_stream(stream, api, books::stream_config{flags, priority});
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
  return guarded("aclrtSynchronizeStream", call::other,
                 [&] { hb::synchronize(stream_of(stream, "aclrtSynchronizeStream")); });
}
aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, std::int32_t timeout) {
  static constexpr const char* api = "aclrtSynchronizeStreamWithTimeout";
  return guarded(api, call::stream_sync, [&] {
    hb::stream_handle s = stream_of(stream, api);
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
    std::chrono::microseconds budget{};
    if (bounded(timeout, api, budget)) {
      hb::wait_for(s, e, budget);
    } else {
      hb::wait(s, e);
    }
  });
}
aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus* status) {
  return guarded("aclrtStreamQuery", call::other, [&] {
    require(status, "aclrtStreamQuery", "status");
    *status = hb::query(stream_of(stream, "aclrtStreamQuery")) ? ACL_STREAM_STATUS_COMPLETE
                                                                : ACL_STREAM_STATUS_NOT_READY;
  });
}
aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  return guarded("aclrtStreamWaitEvent", call::other, [&] {
    hb::wait(stream_of(stream, "aclrtStreamWaitEvent"), event_of(event, "aclrtStreamWaitEvent"));
  });
}
aclError aclrtStreamWaitEventWithFlag(aclrtStream stream, aclrtEvent event, std::uint32_t timeout, std::uint32_t flag) {
  static constexpr const char* api = "aclrtStreamWaitEventWithFlag";
  return guarded(api, call::other, [&] {
    hb::stream_handle s = stream_of(stream, api);
    hb::event_handle e = event_of(event, api);
    if (flag != ACL_EVENT_WAIT_DEFAULT && flag != ACL_EVENT_WAIT_EXTERNAL)
      throw_rule(errc::invalid_parameter, api, "flag must be ACL_EVENT_WAIT_DEFAULT or ACL_EVENT_WAIT_EXTERNAL");
    if (flag == ACL_EVENT_WAIT_DEFAULT) return hb::wait(s, e);
    // CANN documents timeout 0 (never times out) with the external flag; its
    // own sample passes -1 (UINT32_MAX as uint32_t), which means the same.
    if (timeout != 0 && timeout != UINT32_MAX)
      throw_rule(errc::invalid_parameter, api, "ACL_EVENT_WAIT_EXTERNAL takes timeout 0 (no timeout)");
    // An ACL_EVENT_EXTERNAL event's wait blocks until its signal; on an
    // ACL_EVENT_SYNC event of aclrtCreateEventExWithFlag it is a model's wait
    // on a record made outside the model (capture only).
    if (hb::flags_of(e) == keel::event_flags::external) return hb::wait(s, e);
    require_ex_sync_event(event, api);
    hb::wait_external(s, e);
  });
}

}  // extern "C"
