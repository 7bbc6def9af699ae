// SPDX-License-Identifier: Apache-2.0
// basic_allocator_registration: a memory pool registered as a stream's
// allocator, for the internal memory (workspaces) of the operators that run
// on that stream, RAII (unregistered when the registration goes). The
// explicit form of a hidden thread-local pool: each client registers its own
// pool on its own streams, and nothing is shared that it did not share.
//
// keel keeps the registry itself (registered_pool(stream) answers on every
// backend; the host backend has nothing more); a backend whose runtime has
// per-stream allocators of its own (ACL's aclrtAllocatorRegister) supplies
// stream_allocator_hooks<B>, and the registration registers there too.
#pragma once

#include <mutex>
#include <unordered_map>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/memory_pool.hpp"
#include "keel/runtime/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief What a backend does, beyond keel's registry, when a pool is
 * registered as a stream's allocator. The primary template does nothing; a
 * backend specialises it with `static void attach(basic_stream_ref<B>,
 * basic_memory_pool_ref<B>)` (may throw; nothing registered then) and
 * `static void detach(basic_stream_ref<B>) noexcept`.
 */
template <class B>
struct stream_allocator_hooks {
  /// Registers nothing with the runtime.
  static void attach(basic_stream_ref<B>, basic_memory_pool_ref<B>) noexcept {}
  /// Unregisters nothing.
  static void detach(basic_stream_ref<B>) noexcept {}
};

/// @cond
namespace detail {
template <class B>
struct allocator_registry {
  std::mutex m;
  std::unordered_map<typename B::stream_handle, basic_memory_pool_ref<B>> pools;
  static allocator_registry& get() {
    static allocator_registry* const r = new allocator_registry;  // outlives every registration, even static ones
    return *r;
  }
};
}  // namespace detail
/// @endcond

/**
 * @brief The pool registered as @p stream's allocator, or an empty view.
 * Thread-safe. @throws keel::error invalid_handle for an empty stream.
 */
template <class B>
basic_memory_pool_ref<B> registered_pool(basic_stream_ref<B> stream) {
  auto s = detail::checked_handle(stream, "keel::registered_pool");
  auto& r = detail::allocator_registry<B>::get();
  std::lock_guard<std::mutex> lock(r.m);
  auto it = r.pools.find(s);
  return it == r.pools.end() ? basic_memory_pool_ref<B>{} : it->second;
}

/**
 * @brief Workspace for an operator on @p stream from the pool registered on
 * it, released in the stream's order when the buffer goes.
 * @throws keel::error invalid_state naming the stream when none is
 * registered; what the pool's allocate throws.
 */
template <class B>
basic_pool_buffer<B> allocate_workspace(basic_stream_ref<B> stream, std::size_t bytes) {
  basic_memory_pool_ref<B> pool = registered_pool(stream);
  if (!pool)
    ::keel::detail::throw_composed(errc::invalid_state, "keel::allocate_workspace",
                                   {"stream ", stream.id(), " has no registered allocator (register a pool first)"});
  return pool.allocate(stream, bytes);
}

/**
 * @brief Registers a pool as a stream's allocator for as long as it lives.
 *
 * Ownership: holds the registration (move-only: a moved-from or reset one
 * holds none, its stream() is an empty view and its destruction does
 * nothing; the stream keeps the pool as long as the object the registration
 * moved to lives); the pool and the stream must outlive it. Thread safety:
 * registrations of different streams are independent; one per stream at a
 * time. Exceptions: the constructor throws keel::error invalid_state when the
 * stream already has one (nothing changes) or what the backend's
 * registration throws; moves, reset() and the destructor are noexcept.
 *
 * @code
 * keel::host::memory_pool pool{dev, {"client A"}};
 * keel::host::allocator_registration uses{stream, pool};   // operators on stream take workspace from pool
 * @endcode
 */
template <KEEL_MEMORY_POOL_BACKEND B>
class [[nodiscard]] basic_allocator_registration {
 public:
  /// Registers @p pool as @p stream's allocator.
  basic_allocator_registration(basic_stream_ref<B> stream, basic_memory_pool_ref<B> pool) : stream_(stream) {
    static constexpr const char* api = "keel::allocator_registration";
    auto s = detail::checked_handle(stream, api);
    if (!pool) detail::throw_empty(api);
    auto& r = detail::allocator_registry<B>::get();
    {
      std::lock_guard<std::mutex> lock(r.m);
      auto [it, fresh] = r.pools.emplace(s, pool);
      if (!fresh)
        ::keel::detail::throw_composed(errc::invalid_state, api,
                                       {"stream ", stream.id(), " already has a registered allocator (",
                                        it->second.name(), "); drop that registration first"});
    }
    try {
      stream_allocator_hooks<B>::attach(stream, pool);
    } catch (...) {
      std::lock_guard<std::mutex> lock(r.m);
      r.pools.erase(s);
      throw;
    }
  }
  /// Takes the other's registration; the other holds none afterwards.
  basic_allocator_registration(basic_allocator_registration&& o) noexcept : stream_(std::exchange(o.stream_, {})) {}
  /// Unregisters what this holds, then takes the other's registration; the other holds none afterwards.
  basic_allocator_registration& operator=(basic_allocator_registration&& o) noexcept {
    if (this != &o) {
      reset();
      stream_ = std::exchange(o.stream_, {});
    }
    return *this;
  }
  basic_allocator_registration(const basic_allocator_registration&) = delete;
  basic_allocator_registration& operator=(const basic_allocator_registration&) = delete;
  /// Unregisters (nothing for a moved-from or reset registration).
  ~basic_allocator_registration() { reset(); }
  /** @brief Unregisters now; this holds none afterwards. Throws: nothing. */
  void reset() noexcept {
    if (!stream_) return;
    const basic_stream_ref<B> s = std::exchange(stream_, {});
    stream_allocator_hooks<B>::detach(s);
    auto& r = detail::allocator_registry<B>::get();
    std::lock_guard<std::mutex> lock(r.m);
    r.pools.erase(detail::handle_of(s));
  }
  /// Whether this holds a registration (false once moved from or reset).
  explicit operator bool() const noexcept { return static_cast<bool>(stream_); }
  /// The stream the pool is registered on; an empty view once moved from or reset.
  basic_stream_ref<B> stream() const noexcept { return stream_; }

 private:
  basic_stream_ref<B> stream_;
};

KEEL_END_NAMESPACE  // namespace keel
