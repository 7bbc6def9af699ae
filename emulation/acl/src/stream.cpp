// SPDX-License-Identifier: Apache-2.0
// Streams: creation and destruction (which ends the stream's callback
// subscription and discards a capture it began), synchronization, queries
// and waits on events. Each aclrtStream is a host backend stream.
#include <chrono>
#include <cstdint>
#include <mutex>

#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

hb::stream_handle stream_of(aclrtStream s, const char* function) {
  if (s == nullptr) throw_rule(errc::null_parameter, function, "stream is null (the emulation has no default stream)");
  std::lock_guard<std::mutex> lock(book().m);
  if (!book().streams.count(s)) throw_rule(errc::invalid_handle, function, "stream is not a live aclrtStream");
  return static_cast<hb::stream_handle>(s);
}

namespace {
aclError destroy_stream(aclrtStream stream, const char* function) {
  return guarded(function, call::other, [&] {
    hb::stream_handle s = stream_of(stream, function);
    model_box* orphan = nullptr;
    {
      std::lock_guard<std::mutex> lock(book().m);
      book().streams.erase(stream);
      auto it = book().capturing.find(s);
      if (it != book().capturing.end()) {
        orphan = it->second;
        book().models.erase(orphan);
        for (auto g : orphan->groups) book().groups.erase(g);
        book().capturing.erase(it);
      }
    }
    hb::destroy_stream(s);  // discards a capture in progress (reported through keel's error handler)
    forget_subscription(stream);  // after its work: a blocking callback still ran on the subscribed thread
    if (orphan != nullptr) {
      for (auto g : orphan->groups) hb::destroy_group(g);
      delete orphan;
    }
  });
}
// A stream of the host backend, persistent (a model can be built on it,
// keel::host's make_persistent_stream) or not.
aclError create_stream(aclrtStream* stream, bool persistent, const char* api) {
  return guarded(api, call::other, [&] {
    require(stream, api, "stream");
    hb::stream_handle s = persistent ? hb::create_persistent_stream(dev()) : hb::create_stream(dev());
    try {
      // The stream's worker (one thread for the stream's life) learns which
      // stream it runs: a replayed callback goes to the executing stream.
      hb::launch_host(s, [s] { worker_stream() = s; });
      std::lock_guard<std::mutex> lock(book().m);
      book().streams.insert(s);
    } catch (...) {
      hb::destroy_stream(s);
      throw;
    }
    *stream = s;
  });
}
}  // namespace

}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtCreateStream(aclrtStream* stream) { return create_stream(stream, false, "aclrtCreateStream"); }
aclError aclrtCreateStreamWithConfig(aclrtStream* stream, std::uint32_t, std::uint32_t flag) {
  // Priority and the other flags tune hardware queues, which a host stream
  // has none of; ACL_STREAM_PERSISTENT makes a stream a model can be built on.
  return create_stream(stream, (flag & ACL_STREAM_PERSISTENT) != 0, "aclrtCreateStreamWithConfig");
}
aclError aclrtDestroyStream(aclrtStream stream) { return destroy_stream(stream, "aclrtDestroyStream"); }
aclError aclrtDestroyStreamForce(aclrtStream stream) { return destroy_stream(stream, "aclrtDestroyStreamForce"); }

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
    if (flag == ACL_EVENT_WAIT_EXTERNAL && (timeout != 0 || hb::flags_of(e) != keel::event_flags::external))
      throw_rule(errc::invalid_parameter, api,
                 "ACL_EVENT_WAIT_EXTERNAL needs an event created with ACL_EVENT_EXTERNAL and timeout 0");
    hb::wait(s, e);
  });
}

}  // extern "C"
