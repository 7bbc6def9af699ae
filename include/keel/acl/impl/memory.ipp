// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/memory.hpp (memory_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/memory.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto memory_calls::allocate(stream_handle s, std::size_t bytes, memory_kind kind) -> buffer_handle {
  auto b = std::make_unique<block>();
  device* dev = s->dev;
  collect_releases(*dev);  // memory whose streams passed its release goes back first
  void* p = nullptr;
  if (bytes != 0) {
    switch (kind) {
      case memory_kind::device:
        dev->check(entered(*dev).aclrtMalloc(&p, bytes, malloc_policy::huge_first), "aclrtMalloc");
        b->alloc =
            std::shared_ptr<void>(p, [dev](void* q) { report(entered(*dev).aclrtFree.get()(q), "aclrtFree"); });
        break;
      case memory_kind::pinned_host:
        dev->check(entered(*dev).aclrtMallocHost(&p, bytes), "aclrtMallocHost");
        b->alloc = std::shared_ptr<void>(
            p, [dev](void* q) { report(entered(*dev).aclrtFreeHost.get()(q), "aclrtFreeHost"); });
        break;
      case memory_kind::pageable_host:
        p = ::operator new(bytes, std::align_val_t{64});
        b->alloc = std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t{64}); });
        break;
    }
  }
  b->data = p;
  b->bytes = bytes;
  b->kind = kind;
  b->stream = s;
  return b.release();
}

KEEL_DECL void memory_calls::free_async(buffer_handle b) noexcept {
  stream_handle s = b->stream;
  device& dev = *s->dev;
  try {
    if (b->alloc) {
      const stream_handle keeper = keeper_of(s);
      if (keeper != s || native_capturing(s)) {
        std::lock_guard<std::mutex> lock(keeper->m);
        keeper->keep.push_back(std::move(b->alloc));
      } else if (!defer_release(s, b->alloc)) {
        if (entered(dev).aclrtSynchronizeStream(s->native) != 0) {  // cannot tell when the stream passes: keep it
          std::lock_guard<std::mutex> lock(s->m);
          s->keep.push_back(std::move(b->alloc));
        }
      }
    }
  } catch (...) {
    report_current_exception("keel::acl::backend::free_async");
  }
  delete b;  // drops the last owner unless deferred or kept by queued work
  collect_releases(dev);
}

KEEL_DECL auto memory_calls::defer_release(stream_handle s, std::shared_ptr<void>& alloc) noexcept -> bool {
  device& dev = *s->dev;
  const api& a = entered(dev);
  if (!a.aclrtRecordEvent || !a.aclrtQueryEventStatus) return false;
  acl::event_handle e = nullptr;
  try {
    std::lock_guard<std::mutex> lock(dev.releases_m_);
    dev.releases_.reserve(dev.releases_.size() + 1);
    if (!dev.spare_events_.empty()) {
      e = dev.spare_events_.back();
      dev.spare_events_.pop_back();
    }
  } catch (...) {
    return false;
  }
  // ACL_EVENT_SYNC (hicann/runtime docs/zh/api_ref/07_event_management.md):
  // a plain event, queried later.
  if (e == nullptr &&
      (!a.aclrtCreateEventWithFlag || a.aclrtCreateEventWithFlag.get()(&e, acl::event_flags::sync) != 0))
    return false;
  if (a.aclrtRecordEvent.get()(e, s->native) != 0) {
    if (a.aclrtDestroyEvent) a.aclrtDestroyEvent.get()(e);
    return false;
  }
  std::lock_guard<std::mutex> lock(dev.releases_m_);
  dev.releases_.push_back({e, s->native, std::move(alloc)});  // reserved above: cannot throw
  return true;
}

KEEL_DECL void memory_calls::collect_releases(device& dev) noexcept {
  const auto query = entered(dev).aclrtQueryEventStatus.get();
  if (query == nullptr) return;
  std::vector<std::shared_ptr<void>> done;
  std::lock_guard<std::mutex> lock(dev.releases_m_);
  if (dev.releases_.empty()) return;
  try {
    done.reserve(dev.releases_.size());
    dev.spare_events_.reserve(dev.spare_events_.size() + dev.releases_.size());
  } catch (...) {
    return;
  }
  // One stream passes its release points in the order they were recorded:
  // after the first it has not passed, skip its later ones unasked.
  acl::stream_handle blocked[16];
  std::size_t n_blocked = 0;
  const auto is_blocked = [&](acl::stream_handle s) {
    return std::find(blocked, blocked + n_blocked, s) != blocked + n_blocked;
  };
  auto keep = dev.releases_.begin();
  for (auto it = dev.releases_.begin(); it != dev.releases_.end(); ++it) {
    event_recorded_status st = event_recorded_status::not_ready;
    const bool passed =
        !is_blocked(it->stream) && query(it->event, &st) == 0 && st == event_recorded_status::complete;
    if (!passed && n_blocked < std::size(blocked) && !is_blocked(it->stream)) blocked[n_blocked++] = it->stream;
    if (passed) {
      done.push_back(std::move(it->alloc));
      dev.spare_events_.push_back(it->event);
    } else {
      *keep++ = std::move(*it);
    }
  }
  dev.releases_.erase(keep, dev.releases_.end());
  // `done` frees after the lock is released (declared before the guard).
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
