// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native memory calls: aclrtMalloc / aclrtMallocHost, and
// releases in stream order that do not wait: an event recorded on the
// stream marks the release point, and a later call that finds it complete
// frees the memory.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "keel/acl/detail/handles.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
struct memory_calls : native_types {
  KEEL_DECL static buffer_handle allocate(stream_handle s, std::size_t bytes, memory_kind kind);

  /**
   * Releases in stream order without waiting: an event recorded on the stream
   * marks the release point, and the memory is freed by a later call that
   * finds the event complete (allocate, free_async, synchronize). Captured,
   * the memory lives as long as the model (the stream's owners pass to it).
   * If no event can be recorded, the release waits for the stream.
   */
  KEEL_DECL static void free_async(buffer_handle b) noexcept;
  static void* data(buffer_handle b) noexcept { return b->data; }
  static std::size_t size(buffer_handle b) noexcept { return b->bytes; }
  static std::shared_ptr<void> keep_alive(buffer_handle b) { return b->alloc; }

  // Records a release point on s and queues alloc behind it; false if no
  // event could be had or recorded (the caller then waits for the stream).
  KEEL_DECL static bool defer_release(stream_handle s, std::shared_ptr<void>& alloc) noexcept;

  // Frees the released memory whose streams have passed the release point.
  // The memory is dropped outside the lock (its deleter calls ACL).
  KEEL_DECL static void collect_releases(device& dev) noexcept;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/memory.ipp"
#endif
