// SPDX-License-Identifier: Apache-2.0
// The memory-pool layer of the backend requirement: what keel's own
// stream-ordered pool (basic_memory_pool, keel/runtime/memory_pool.hpp) runs
// over. It adds no call of its own: a backend with the memory and event
// layers has it, and the pool builds size classes, stream-ordered reuse and
// statistics on top of them.
#pragma once

#include <type_traits>
#include <utility>

#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/backend/event.hpp"
#include "keel/runtime/backend/memory.hpp"
#include "keel/runtime/backend/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::memory_pool_layer {
template <class B>
struct status {
  static constexpr bool value = memory_layer::status<B>::value && event_layer::status<B>::value;
};

template <class B>
struct check {
  static constexpr bool memory = memory_layer::check<B>::value;  // the layers it builds on name their calls first
  static constexpr bool events = event_layer::check<B>::value;
  static_assert(status<B>::value,
                KEEL_DETAIL_BACKEND_LACKS("memory-pool", "base layers: a pool needs the memory and event layers"));
  static constexpr bool value = status<B>::value;
};
}  // namespace detail::memory_pool_layer
/// @endcond

/**
 * @brief The memory-pool layer (on top of the memory and event layers): what
 * basic_memory_pool needs. It asks for no call beyond those layers: the pool
 * reserves memory with `allocate` (on a stream of its own), hands it out in
 * size classes, learns when another stream has passed a release with
 * `query(stream)` or orders the reuse behind it with an event (`record` on
 * the releasing stream, `wait` on the allocating one), and returns memory
 * with `free_async`.
 *
 * Optional calls it uses when present: `retain_stream(h)` / `release_stream(h)`
 * (a pooled allocation then keeps its stream's record alive, so a release
 * after the stream was destroyed is safe), `capture_status(h)` (allocations
 * during a capture given the pool belong to the model).
 */
template <class B>
inline constexpr bool is_memory_pool_backend_v = detail::memory_pool_layer::status<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The memory-pool layer as a C++20 concept (see is_memory_pool_backend_v). */
template <class B>
concept memory_pool_backend = is_memory_pool_backend_v<B>;
/// @cond
namespace detail {
template <class B>
concept diagnosed_memory_pool_backend = memory_pool_layer::check<B>::value;
}  // namespace detail
/// @endcond
/** @brief A template parameter constrained on the memory-pool layer (`class` before C++20; the pool also static_asserts it). */
#define KEEL_MEMORY_POOL_BACKEND ::keel::detail::diagnosed_memory_pool_backend
#else
#define KEEL_MEMORY_POOL_BACKEND class
#endif

KEEL_END_NAMESPACE  // namespace keel
