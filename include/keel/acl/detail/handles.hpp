// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native handle types, where the checked layer finds its
// books in each record, and what every part of the native backend shares:
// the device made current before each call, whose keep list holds what
// queued work uses, and ACL's own view of a stream's capture.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "keel/acl/api.hpp"
#include "keel/acl/detail/block.hpp"
#include "keel/acl/detail/capture_state.hpp"
#include "keel/acl/detail/event_state.hpp"
#include "keel/acl/detail/group_state.hpp"
#include "keel/acl/detail/stream_state.hpp"
#include "keel/acl/detail/device.hpp"
#include "keel/acl/status.hpp"
#include "keel/acl/types.hpp"
#include "keel/core/error.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

class launch_context;

namespace detail {

/// @cond
struct native_types {
  using device_type = device;
  using stream_handle = stream_box*;
  using event_handle = event_box*;
  using model_handle = model_box*;
  using group_handle = group_box*;
  using buffer_handle = block*;
  using launch_context = keel::acl::launch_context;

  static constexpr const char* name = "acl";

  static checked::device_books<stream_box*>& books(device_type& d) noexcept { return d.books_; }
  static auto& books(stream_handle s) noexcept { return s->books; }
  static auto& books(event_handle e) noexcept { return e->books; }
  static checked::group_books& books(group_handle g) noexcept { return g->books; }
  static checked::model_books& books(model_handle m) noexcept { return m->books; }

  // Every entry reaches ACL through here: the device is made current on the
  // calling thread first (device::make_current), whatever thread it is.
  static const api& entered(const device& dev) noexcept {
    dev.enter();
    return dev.api_;
  }

  // keel's wait budget as ACL's int32 milliseconds: rounded up, at least 1
  // (ACL's timeouts have millisecond grain; 0 is not a bound in every call).
  static std::int32_t timeout_ms(std::chrono::microseconds timeout) noexcept {
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
    return static_cast<std::int32_t>(std::clamp<decltype(ms)>(ms, 1, INT32_MAX));
  }

  static void report(status st, const char* function) noexcept {
    if (st != 0) report_error(make_status_code(st), function, "release failed");
  }

  // Whose keep list holds the owners of what work issued on s uses: during a
  // capture keel began, the capture's origin (its list moves into the model
  // at capture end), also for a stream that joined it by an event wait;
  // otherwise s, until its next synchronize.
  static stream_handle keeper_of(stream_handle s) noexcept {
    stream_handle keeper = s->keeper.load(std::memory_order_acquire);
    return keeper != nullptr ? keeper : s;
  }

  // Keeps @p owner until the work issued to s so far has run (captured: as
  // long as the model): what the checked layer keeps for an execution or an
  // update (keel/runtime/checked/task_uses.hpp). Without room for it, waits
  // for s instead.
  static void keep_with_work(stream_handle s, std::shared_ptr<void> owner) noexcept {
    const stream_handle keeper = keeper_of(s);
    try {
      std::lock_guard<std::mutex> lock(keeper->m);
      keeper->keep.push_back(std::move(owner));
      return;
    } catch (...) {
    }
    const auto sync = entered(*s->dev).aclrtSynchronizeStream.get();
    if (sync != nullptr) sync(s->native);
  }  // owner, when not kept, is dropped here: the stream has passed its work

  static void release_keeps(stream_handle s) noexcept {
    std::vector<std::shared_ptr<void>> done;
    {
      std::lock_guard<std::mutex> lock(s->m);
      done.swap(s->keep);
    }
  }  // released here, outside the lock

  // Sets a sticky flag (stream_box::foreign, acl_work, event_box::foreign):
  // a plain load first, so the hot paths that find it set write nothing.
  static void mark(std::atomic<bool>& flag) noexcept {
    if (!flag.load(std::memory_order_relaxed)) flag.store(true, std::memory_order_relaxed);
  }

  // ACL's own view of s's capture (aclmdlRICaptureGetInfo): also a capture
  // keel did not begin (an adopted stream's, begun through ACL directly).
  static bool native_capturing(stream_handle s, acl::model_handle* model = nullptr) noexcept {
    const auto info = entered(*s->dev).aclmdlRICaptureGetInfo.get();
    if (info == nullptr) return false;
    acl::capture_status st = acl::capture_status::none;
    acl::model_handle m = nullptr;
    if (info(s->native, &st, &m) != 0) return false;
    if (model != nullptr) *model = m;
    return st != acl::capture_status::none;
  }
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
