// SPDX-License-Identifier: Apache-2.0
// What a memory pool is made with and reports: its reuse attributes and
// options, its statistics, and the size classes it reserves by.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "keel/runtime/backend/memory_pool.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief When a pool may hand memory released on one stream to an
 * allocation on another (CANN's aclrtMemPoolAttr reuse attributes, CUDA's
 * cudaMemPoolReuse*), and how much idle memory it keeps.
 *
 * A block released on stream S is always reused by later allocations on S
 * (stream order makes that safe). For another stream T:
 * - `follow_event_dependencies`: reuse once T's work is known to come after
 *   S's release. keel's own pool cannot see waits issued outside it, so it
 *   takes the dependency as given once S has passed the release (as below);
 * - `allow_opportunistic`: reuse if S has already passed the release when T
 *   allocates (asked with a stream query; never waits);
 * - `allow_internal_dependencies`: reuse anyway, making T wait for S's
 *   release point (an event recorded on S, waited on by T).
 * A block the rules refuse stays in the pool and a new one is reserved.
 * Under the last rule, and for blocks the runtime's own pool reuses, the
 * allocation is ready for work issued to T, not for the host: the host
 * touches pool memory only after basic_pool_buffer::wait_for_host() (or
 * after synchronizing T).
 *
 * `release_threshold`: idle bytes (reserved but not used) the pool keeps;
 * when a release leaves more idle, idle blocks whose releases have passed go
 * back to the backend until it is under the threshold. Default: keep all
 * (CANN's 0 frees idle memory at the next synchronize, which keel's own pool
 * does not see; trim_to() frees explicitly).
 */
struct pool_attributes {
  /// Reuse across streams ordered by events (see above).
  bool follow_event_dependencies = true;
  /// Reuse across streams when the release has already passed.
  bool allow_opportunistic = true;
  /// Reuse across streams by inserting the wait.
  bool allow_internal_dependencies = true;
  /// Idle bytes kept; above it, passed idle blocks are freed.
  std::size_t release_threshold = SIZE_MAX;
};

/** @brief How a pool is made. */
struct pool_options {
  /// The defaults: device memory, no max_size, every reuse rule, keep all idle memory.
  pool_options() = default;
  /// The defaults, with the pool called @p pool_name in diagnostics.
  pool_options(std::string pool_name) : name(std::move(pool_name)) {}  // NOLINT: {"name"} reads well

  /// The name in every diagnostic (empty: "pool #<n>").
  std::string name;
  /// Device memory or pinned host memory.
  memory_kind kind = memory_kind::device;
  /// Most bytes the pool reserves at once (0: up to the device's memory).
  std::size_t max_size = 0;
  /// The reuse rules and release threshold, changeable later (set_attributes).
  pool_attributes attributes;
  /// Reserve from the runtime's own stream-ordered pool when it has one
  /// (CANN's aclrtMemPool* on ACL; keel/runtime/backend/runtime_pool.hpp);
  /// false: keel's own pool over the backend's allocator.
  bool use_runtime_pool = true;
};

/**
 * @brief A pool's figures at one moment. `reserved`: bytes the pool holds
 * from the backend (in use or idle); `used`: bytes handed out (in size
 * classes); `*_high`: their high-water marks since creation (or
 * reset_high_water()); `allocations`: allocate calls that succeeded; `hits`:
 * those served from memory the pool held; `backend_allocations`: blocks
 * reserved from the backend.
 */
struct pool_statistics {
  std::size_t reserved = 0;            ///< bytes held from the backend now
  std::size_t reserved_high = 0;       ///< most bytes held at once
  std::size_t used = 0;                ///< bytes handed out now
  std::size_t used_high = 0;           ///< most bytes handed out at once
  std::uint64_t allocations = 0;       ///< successful allocate calls
  std::uint64_t hits = 0;              ///< allocations served from held memory
  std::uint64_t backend_allocations = 0;  ///< blocks reserved from the backend
};

/// @cond
namespace detail {
// floor(log2(v)) for v > 0: one instruction where the compiler has it (a hit
// computes it twice), a loop elsewhere.
constexpr unsigned pool_floor_log2(std::size_t v) noexcept {
#if defined(__GNUC__) || defined(__clang__)
  static_assert(sizeof(std::size_t) == sizeof(unsigned long long));
  return 63u - static_cast<unsigned>(__builtin_clzll(v));
#else
  unsigned lg = 0;
  while (v >>= 1) ++lg;
  return lg;
#endif
}
}  // namespace detail
/// @endcond

/**
 * @brief The size class of an allocation of @p bytes: what the pool reserves
 * and counts as used for it. 512 bytes at least, then four classes per power
 * of two (at most 25 % above the request). Throws: nothing; requests larger
 * than PTRDIFF_MAX have no class (the pool refuses them).
 */
constexpr std::size_t pool_size_class(std::size_t bytes) noexcept {
  if (bytes <= 512) return 512;
  const unsigned lg = detail::pool_floor_log2(bytes - 1);  // at least 9
  const std::size_t step = std::size_t{1} << (lg - 2);
  return (bytes + step - 1) & ~(step - 1);
}

template <KEEL_MEMORY_POOL_BACKEND B>
class basic_memory_pool;
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_memory_pool_ref;
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_pool_buffer;

KEEL_END_NAMESPACE  // namespace keel
