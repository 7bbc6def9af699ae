// SPDX-License-Identifier: Apache-2.0
// The members of keel::acl::device that reach every native layer and the
// checked layer's books: its destructor (which drains the records the device
// owns) and the forget_* calls. Included by keel/acl/device.hpp, the header
// a program includes for the device, and by keel/acl/backend.hpp, which it
// includes first: the class itself (keel/acl/detail/device.hpp) is what the
// native layers are written against, below the backend.
#pragma once

#include "keel/acl/backend.hpp"
#include "keel/acl/detail/device.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

inline void device::finish_deferred_destroys() noexcept {
  for (;;) {
    std::vector<std::thread> pending;
    {
      std::lock_guard<std::mutex> lock(deferred_m_);
      pending.swap(deferred_destroys_);
    }
    if (pending.empty()) break;
    for (auto& t : pending) t.join();
  }
}

inline device::~device() {
  enter();
  finish_deferred_destroys();  // streams whose own host callables destroyed them
  // The records the device owns (viewed from elsewhere, or released by their
  // keel owners). Streams' reporting threads: unsubscribed and joined (a
  // joinable std::thread destroyed with its record would std::terminate).
  streams_.drain_device_records([](detail::stream_box* s) {
    detail::native::stop_host_callbacks(s);
    detail::native::release_stream(s);  // the device's count
  });
  events_.drain_device_records([](detail::event_box* e) { delete e; });
  models_.drain_device_records([](detail::model_box* m) { delete m; });
  groups_.drain_device_records([](detail::group_box* g) { detail::group_box::drop(g); });
  // Whatever is still released in stream order: wait for its stream, then free.
  const auto sync = api_.aclrtSynchronizeEvent.get();
  const auto destroy = api_.aclrtDestroyEvent.get();
  for (auto& r : releases_) {
    if (sync != nullptr) sync(r.event);
    r.alloc.reset();
    if (destroy != nullptr) destroy(r.event);
  }
  if (destroy != nullptr)
    for (acl::event_handle e : spare_events_) destroy(e);
}

inline void device::forget_stream(acl::stream_handle native) noexcept {
  detail::stream_box* gone = streams_.take_device_record(native);
  if (gone == nullptr) return;
  detail::native::stop_host_callbacks(gone);  // its reporting thread is unsubscribed and joined
  backend::forget_books(gone);  // it leaves the capture it took part in
  detail::native::release_stream(gone);  // the device's count (a scope may still hold one)
}

inline void device::forget_model(acl::model_handle native) noexcept {
  detail::model_box* gone = models_.take_device_record(native);
  if (gone == nullptr) return;
  if (const auto& alive = detail::native::books(gone).alive) alive->store(false, std::memory_order_release);
  delete gone;
}

inline void device::forget_group(acl::task_group_handle native) noexcept {
  if (detail::group_box* gone = groups_.take_device_record(native)) detail::group_box::drop(gone);
}

inline std::size_t device::pending_releases() noexcept {
  detail::native::collect_releases(*this);
  std::lock_guard<std::mutex> lock(releases_m_);
  return releases_.size();
}

} KEEL_END_NAMESPACE  // namespace keel::acl
