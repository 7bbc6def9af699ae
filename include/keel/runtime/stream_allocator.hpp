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

#include <memory>
#include <mutex>
#include <type_traits>
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
template <class B, class = void>
struct has_stream_destroy_hook : std::false_type {};
template <class B>
struct has_stream_destroy_hook<B, std::void_t<decltype(B::set_stream_destroy_hook(
                                      std::declval<typename B::stream_handle>(),
                                      static_cast<void (*)(typename B::stream_handle)>(nullptr)))>> : std::true_type {};

// One registration: the pool (held, so that the registry never names a
// freed pool) and whether it is still registered. Guarded by the registry's mutex.
template <class B>
struct allocator_entry {
  basic_memory_pool_ref<B> pool;
  std::shared_ptr<capture_memory_source<B>> hold;
  bool live = true;
};

template <class B>
struct allocator_registry {
  std::mutex m;
  std::unordered_map<typename B::stream_handle, std::shared_ptr<allocator_entry<B>>> pools;
  static allocator_registry& get() {
    static allocator_registry* const r = new allocator_registry;  // outlives every registration, even static ones
    return *r;
  }
  // The stream is being destroyed (the backend's destroy hook): its
  // registration ends now, so a new stream at its address inherits nothing.
  static void stream_destroyed(typename B::stream_handle s) noexcept {
    std::shared_ptr<allocator_entry<B>> entry;
    {
      allocator_registry& r = get();
      std::lock_guard<std::mutex> lock(r.m);
      auto it = r.pools.find(s);
      if (it == r.pools.end()) return;
      entry = std::move(it->second);
      entry->live = false;
      r.pools.erase(it);
    }
    stream_allocator_hooks<B>::detach(basic_stream_ref<B>(from_handle, s));
  }
};
}  // namespace detail
/// @endcond

/**
 * @brief The pool registered as @p stream's allocator, or an empty view
 * (also when the registered pool was destroyed since). Thread-safe.
 * @throws keel::error invalid_handle for an empty stream.
 */
template <class B>
basic_memory_pool_ref<B> registered_pool(basic_stream_ref<B> stream) {
  auto s = detail::checked_handle(stream, "keel::registered_pool");
  auto& r = detail::allocator_registry<B>::get();
  std::lock_guard<std::mutex> lock(r.m);
  auto it = r.pools.find(s);
  if (it == r.pools.end() || it->second->pool.owner_destroyed()) return basic_memory_pool_ref<B>{};
  return it->second->pool;
}

/**
 * @brief Workspace for an operator on @p stream from the pool registered on
 * it, released in the stream's order when the buffer goes.
 * @throws keel::error invalid_state naming the stream when none is
 * registered or the registered pool was destroyed; what the pool's allocate throws.
 */
template <class B>
basic_pool_buffer<B> allocate_workspace(basic_stream_ref<B> stream, std::size_t bytes) {
  static constexpr const char* api = "keel::allocate_workspace";
  auto s = detail::checked_handle(stream, api);
  basic_memory_pool_ref<B> pool;
  {
    auto& r = detail::allocator_registry<B>::get();
    std::lock_guard<std::mutex> lock(r.m);
    auto it = r.pools.find(s);
    if (it != r.pools.end()) pool = it->second->pool;
  }
  if (!pool)
    ::keel::detail::throw_composed(errc::invalid_state, api,
                                   {"stream ", stream.id(), " has no registered allocator (register a pool first)"});
  // The registration holds the pool's books, so the name is still there to give.
  if (pool.owner_destroyed())
    ::keel::detail::throw_composed(errc::invalid_state, api,
                                   {"the pool registered on stream ", stream.id(), " (", pool.name(),
                                    ") was destroyed; a registration must not outlive its pool: drop it first"});
  return pool.allocate(stream, bytes);
}

/**
 * @brief Registers a pool as a stream's allocator for as long as it lives.
 *
 * Ownership: holds the registration (move-only: a moved-from or reset one
 * holds none, its stream() is an empty view and its destruction does
 * nothing; the stream keeps the pool as long as the object the registration
 * moved to lives). The pool and the stream should outlive it; when they do
 * not, nothing dangles: the registration holds the pool's books (a pool
 * destroyed first makes allocate_workspace refuse with invalid_state, and
 * the registered runtime allocator hand out nothing), and a stream destroyed
 * first ends the registration with it (a new stream at the same address
 * inherits none; this then holds none). Thread safety:
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
  using registry = detail::allocator_registry<B>;

 public:
  /// Registers @p pool as @p stream's allocator.
  basic_allocator_registration(basic_stream_ref<B> stream, basic_memory_pool_ref<B> pool) : stream_(stream) {
    static constexpr const char* api = "keel::allocator_registration";
    auto s = detail::checked_handle(stream, api);
    if (!pool) detail::throw_empty(api);
    auto entry = std::make_shared<detail::allocator_entry<B>>();
    entry->pool = pool;
    entry->hold = pool.capture_source();
    auto& r = registry::get();
    {
      std::lock_guard<std::mutex> lock(r.m);
      auto [it, fresh] = r.pools.emplace(s, entry);
      if (!fresh)
        ::keel::detail::throw_composed(errc::invalid_state, api,
                                       {"stream ", stream.id(), " already has a registered allocator (",
                                        it->second->pool.name(), "); drop that registration first"});
    }
    try {
      stream_allocator_hooks<B>::attach(stream, pool);
    } catch (...) {
      std::lock_guard<std::mutex> lock(r.m);
      r.pools.erase(s);
      throw;
    }
    if constexpr (detail::has_stream_destroy_hook<B>::value) B::set_stream_destroy_hook(s, &registry::stream_destroyed);
    entry_ = std::move(entry);
  }
  /// Takes the other's registration; the other holds none afterwards.
  basic_allocator_registration(basic_allocator_registration&& o) noexcept
      : stream_(std::exchange(o.stream_, {})), entry_(std::move(o.entry_)) {}
  /// Unregisters what this holds, then takes the other's registration; the other holds none afterwards.
  basic_allocator_registration& operator=(basic_allocator_registration&& o) noexcept {
    if (this != &o) {
      reset();
      stream_ = std::exchange(o.stream_, {});
      entry_ = std::move(o.entry_);
    }
    return *this;
  }
  basic_allocator_registration(const basic_allocator_registration&) = delete;
  basic_allocator_registration& operator=(const basic_allocator_registration&) = delete;
  /// Unregisters (nothing for a moved-from or reset registration, or one whose stream was destroyed).
  ~basic_allocator_registration() { reset(); }
  /** @brief Unregisters now; this holds none afterwards. Throws: nothing. */
  void reset() noexcept {
    const std::shared_ptr<detail::allocator_entry<B>> entry = std::move(entry_);
    const basic_stream_ref<B> s = std::exchange(stream_, {});
    if (!entry) return;
    {
      auto& r = registry::get();
      std::lock_guard<std::mutex> lock(r.m);
      if (!entry->live) return;  // its stream was destroyed: the registration ended with it
      entry->live = false;
      r.pools.erase(detail::handle_of(s));
    }
    if constexpr (detail::has_stream_destroy_hook<B>::value)
      B::set_stream_destroy_hook(detail::handle_of(s), nullptr);
    stream_allocator_hooks<B>::detach(s);
  }
  /// Whether this holds a registration (false once moved from or reset, or once its stream was destroyed).
  explicit operator bool() const noexcept { return live(); }
  /// The stream the pool is registered on; an empty view once moved from or reset, or once the stream was destroyed.
  basic_stream_ref<B> stream() const noexcept { return live() ? stream_ : basic_stream_ref<B>{}; }

 private:
  bool live() const noexcept {
    if (!entry_) return false;
    auto& r = registry::get();
    std::lock_guard<std::mutex> lock(r.m);
    return entry_->live;
  }
  basic_stream_ref<B> stream_;
  std::shared_ptr<detail::allocator_entry<B>> entry_;
};

KEEL_END_NAMESPACE  // namespace keel
