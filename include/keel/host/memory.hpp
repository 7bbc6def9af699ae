// SPDX-License-Identifier: Apache-2.0
// The host backend's native memory calls: allocations counted against the
// device's memory limit, released in stream order by the stream's worker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "keel/core/error.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct memory_calls : native_types {
  /** Memory whose release is ordered on @p s (the stream it is freed on). */
  static buffer_handle allocate(stream_handle s, std::size_t bytes, memory_kind kind) {
    // Reserve the bytes against the device's memory limit first; ~block
    // gives them back when the stream-ordered release has run.
    device_state& dev = *s->dev;
    // No object may be larger than PTRDIFF_MAX bytes, and the aligned
    // operator new rounds sizes up (libstdc++ 12 wraps near SIZE_MAX and
    // returns a few bytes): refuse before anything is reserved.
    if (bytes > static_cast<std::size_t>(PTRDIFF_MAX))
      ::keel::detail::throw_composed(
          errc::out_of_memory, "keel::buffer",
          {"cannot allocate ", bytes, " bytes: larger than the largest object (", PTRDIFF_MAX, " bytes)"});
    const std::size_t limit = dev.memory_limit();
    std::size_t used = dev.memory_in_use_.load(std::memory_order_relaxed);
    do {
      if (limit != 0 && (bytes > limit || used > limit - bytes))
        ::keel::detail::throw_composed(
            errc::out_of_memory, "keel::buffer",
            {"cannot allocate ", bytes, " bytes: ", used, " of the device's ", limit, " bytes are in use"});
    } while (!dev.memory_in_use_.compare_exchange_weak(used, used + bytes, std::memory_order_acq_rel));
    try {
      return new block(bytes, kind, s);
    } catch (const std::bad_alloc&) {
      dev.memory_in_use_.fetch_sub(bytes, std::memory_order_acq_rel);
      ::keel::detail::throw_composed(errc::out_of_memory, "keel::buffer", {"cannot allocate ", bytes, " bytes"});
    }
  }

  /** Releases in stream order: the memory lives until the stream passes this point. */
  static void free_async(buffer_handle b) noexcept {
    stream_state* s = b->stream.get();
    std::lock_guard<std::mutex> lock(s->close_m);
    if (!s->closed) {
      try {
        s->submit<true>([r = ref_ptr<block>(b, {})] {});
        return;
      } catch (...) {
        report_current_exception("keel::buffer::release");
      }
    }
    ref_ptr<block>::drop(b);
  }

  static void* data(buffer_handle b) noexcept { return b->data; }
  static std::size_t size(buffer_handle b) noexcept { return b->bytes; }
  static memory_kind kind_of(buffer_handle b) noexcept { return b->kind; }
  /** Shares ownership of the allocation: captured work holding it can never replay into freed memory. */
  static std::shared_ptr<void> keep_alive(buffer_handle b) {
    return std::shared_ptr<void>(b->data, [r = ref_ptr<block>(b)](void*) {});
  }

};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
