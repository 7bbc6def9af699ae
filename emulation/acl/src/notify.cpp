// SPDX-License-Identifier: Apache-2.0
// Notifies (08_notify_management.md): a flag one stream sets
// (aclrtRecordNotify) and another stream waits for and clears
// (aclrtWaitAndResetNotify), the device's lightweight way for one stream to
// wait for another. Both are tasks of their streams; a notify belongs to the
// device it was made on, and serves that device's streams only.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "detail/capture_rules.hpp"
#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

struct notify_object {
  std::atomic<bool> recorded{false};
  std::uint32_t id = 0;
  std::int32_t device = 0;
};

// The live notifies; a task holds its notify, so a notify destroyed while
// a record or wait is still queued stays valid for it.
struct notify_book {
  std::mutex m;
  std::unordered_map<aclrtNotify, std::shared_ptr<notify_object>> live;
  std::uint32_t next_id = 0;
};
notify_book& notifies() {
  static notify_book* const b = new notify_book;  // never destroyed, as book()
  return *b;
}

std::shared_ptr<notify_object> notify_of(aclrtNotify n) {
  if (n == nullptr) throw_status(ACL_ERROR_INVALID_PARAM, "notify is null");
  std::lock_guard<std::mutex> lock(notifies().m);
  const auto it = notifies().live.find(n);
  if (it == notifies().live.end()) throw_status(ACL_ERROR_RT_INVALID_HANDLE, "notify is not a live aclrtNotify");
  return it->second;
}

// The stream the task goes to: the current device's, and the notify's.
hb::stream_handle notify_stream(const notify_object& n, aclrtStream stream, const char* function) {
  hb::stream_handle s = current_device_stream(stream, function);
  cann_rules::check_issue(stream);
  if (stream_device(s) != n.device)
    throw_status(ACL_ERROR_RT_STREAM_CONTEXT, "the notify is on device " + std::to_string(n.device) +
                                                  ", the stream on device " + std::to_string(stream_device(s)));
  return s;
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtCreateNotify(aclrtNotify* notify, std::uint64_t flag) {
  static constexpr const char* api = "aclrtCreateNotify";
  return guarded(api, call::other, [&] {
    require(notify, api, "notify");
    if (flag != ACL_NOTIFY_DEFAULT && flag != ACL_NOTIFY_DEVICE_USE_ONLY)
      throw_status(ACL_ERROR_INVALID_PARAM, "flag must be ACL_NOTIFY_DEFAULT or ACL_NOTIFY_DEVICE_USE_ONLY");
    auto made = std::make_shared<notify_object>();
    made->device = this_thread_state().current_device;
    std::lock_guard<std::mutex> lock(notifies().m);
    made->id = notifies().next_id++;
    notifies().live.emplace(made.get(), made);
    *notify = made.get();
  });
}

aclError aclrtDestroyNotify(aclrtNotify notify) {
  static constexpr const char* api = "aclrtDestroyNotify";
  return guarded(api, call::other, [&] {
    notify_of(notify);
    std::lock_guard<std::mutex> lock(notifies().m);
    notifies().live.erase(notify);
  });
}

aclError aclrtRecordNotify(aclrtNotify notify, aclrtStream stream) {
  static constexpr const char* api = "aclrtRecordNotify";
  return guarded(api, call::other, [&] {
    std::shared_ptr<notify_object> n = notify_of(notify);
    hb::stream_handle s = notify_stream(*n, stream, api);
    hb::launch_host(s, [n] { n->recorded.store(true, std::memory_order_release); });
    cann_rules::note_task(stream);
  });
}

// timeout: seconds, 0 waiting for ever. A wait that times out fails its
// stream (ACL_ERROR_RT_AICORE_EXCEPTION at the next synchronize).
aclError aclrtWaitAndResetNotify(aclrtNotify notify, aclrtStream stream, std::uint32_t timeout) {
  static constexpr const char* api = "aclrtWaitAndResetNotify";
  return guarded(api, call::other, [&] {
    std::shared_ptr<notify_object> n = notify_of(notify);
    hb::stream_handle s = notify_stream(*n, stream, api);
    hb::launch_host(s, [n, timeout] {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
      for (unsigned spins = 0; !n->recorded.exchange(false, std::memory_order_acq_rel); ++spins) {
        if (timeout != 0 && std::chrono::steady_clock::now() >= deadline)
          throw_rule(errc::timeout, "aclrtWaitAndResetNotify", "the notify was not recorded within the timeout");
        if (spins < 64) {
          std::this_thread::yield();
        } else {
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
    });
    cann_rules::note_task(stream);
  });
}

aclError aclrtGetNotifyId(aclrtNotify notify, std::uint32_t* notifyId) {
  static constexpr const char* api = "aclrtGetNotifyId";
  return guarded(api, call::other, [&] {
    require(notifyId, api, "notifyId");
    *notifyId = notify_of(notify)->id;
  });
}

aclError aclrtNotifyBatchReset(aclrtNotify* notifies, std::size_t num) {
  static constexpr const char* api = "aclrtNotifyBatchReset";
  return guarded(api, call::other, [&] {
    require(notifies, api, "notifies");
    if (num == 0) throw_status(ACL_ERROR_INVALID_PARAM, "num is 0");
    std::vector<std::shared_ptr<notify_object>> all;
    for (std::size_t i = 0; i < num; ++i) all.push_back(notify_of(notifies[i]));  // all valid, or none reset
    for (auto& n : all) n->recorded.store(false, std::memory_order_release);
  });
}

}  // extern "C"
