// SPDX-License-Identifier: Apache-2.0
// The runtime's own stream-ordered pool under keel's (an optional part of the
// memory-pool layer): where a runtime has one (CANN's aclrtMemPool*, CUDA's
// cudaMemPool_t), basic_memory_pool reserves its blocks from it and gives
// them back to it, so the memory keel lets go of returns to the runtime's
// pool and from there to the device. keel's books (size classes, same-stream
// hits, captures, statistics) stay on top either way.
#pragma once

#include <cstddef>

#include "keel/runtime/memory_pool_options.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief What basic_memory_pool reserves its blocks from when the runtime
 * has a pool of its own. The primary template says it has none: the pool
 * reserves with the backend's allocate and frees with free_async.
 *
 * A specialization says available = true and has these static members. All
 * but allocate are noexcept; all are called with the pool's books consistent.
 * - handle: the runtime's pool handle type.
 * - create(stream, kind, max_size, attributes): a runtime pool for the keel
 *   pool whose own stream is given, or a null handle when the runtime lacks
 *   the calls or the memory kind (keel's pool is then its own over the
 *   backend's allocator); throws keel::error when the runtime fails.
 * - allocate(pool, stream, bytes): memory ordered on the allocating stream;
 *   throws keel::error, out_of_memory when the runtime has none for it.
 * - free(pointer, stream): back to the runtime's pool in that stream's order.
 * - trim_to(pool, stream, keep): the runtime's pool returns idle memory to
 *   the device until it holds at most keep bytes (or what is in use).
 * - set_attributes(pool, stream, attributes): the reuse rules, for the
 *   runtime's own reuse of what keel gives back.
 * - destroy(pool, stream).
 *
 * Ownership: none (static members). Thread safety: as the runtime's calls.
 * Exceptions: as listed; the primary template has no calls.
 */
template <class B>
struct runtime_memory_pool {
  /// No runtime pool: keel's pool is its own over the backend's allocator.
  static constexpr bool available = false;
  /// The (absent) runtime pool's handle.
  using handle = void*;
};

KEEL_END_NAMESPACE  // namespace keel
