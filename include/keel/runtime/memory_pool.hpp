// SPDX-License-Identifier: Apache-2.0
// basic_memory_pool (owning) and basic_memory_pool_ref: stream-ordered
// allocation with reuse by size class, CANN's and CUDA's reuse rules as pool
// attributes, a release threshold, trim_to and statistics; basic_pool_buffer,
// the allocation it hands out. Written once over the memory and event layers
// (keel/runtime/backend/memory_pool.hpp); models captured with a pool own
// what their capture took from it (keel/runtime/model.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/memory_pool_core.hpp"
#include "keel/runtime/memory_pool_options.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE


/**
 * @brief One allocation from a basic_memory_pool: like basic_buffer, its
 * release is ordered on a stream (the one it was allocated on, or the one
 * rebind() names), and span() shares ownership so that work which uses it
 * (and every model that captured that work) keeps it alive.
 *
 * Ownership: unique (move-only); destroying or reset() releases it in its
 * stream's order; moved-from is empty. Thread safety: none of its own.
 * Exceptions: release() throws keel::error for the wrong stream (object
 * unchanged); the destructor is noexcept.
 */
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_pool_buffer {
 public:
  /// An empty allocation.
  basic_pool_buffer() noexcept = default;
  /// Takes the other object's allocation; the other is left empty.
  basic_pool_buffer(basic_pool_buffer&& o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)), b_(std::exchange(o.b_, nullptr)) {}
  /// Releases what this holds (in its stream's order), then takes the other's allocation.
  basic_pool_buffer& operator=(basic_pool_buffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = std::exchange(o.pool_, nullptr);
      b_ = std::exchange(o.b_, nullptr);
    }
    return *this;
  }
  basic_pool_buffer(const basic_pool_buffer&) = delete;
  basic_pool_buffer& operator=(const basic_pool_buffer&) = delete;
  ~basic_pool_buffer() { reset(); }

  /// Whether this holds an allocation.
  explicit operator bool() const noexcept { return b_ != nullptr; }
  /**
   * @brief The memory (host-addressable on the host backend and for pinned
   * host pools). The host may touch it only after wait_for_host(): until
   * then it belongs to the allocation's stream's order (see wait_for_host).
   * @throws keel::error invalid_handle if empty.
   */
  void* data() const { return checked("keel::pool_buffer::data")->data; }
  /**
   * @brief Blocks until the host may read and write the allocation: until
   * the work issued so far to the stream the allocation is ordered on has
   * run. Pool memory is stream-ordered: a block released on another stream
   * may be handed out while that stream's work still uses it, behind a
   * dependency only work on the allocation's stream respects (the default
   * `allow_internal_dependencies`: the stream waits for the release point),
   * so a host write right after allocate() can land under another stream's
   * in-flight work. Work issued to the stream later is not waited for.
   * @throws keel::error invalid_handle if empty; what synchronizing the
   * stream throws (capture_violation on a capturing stream, task_failed).
   */
  void wait_for_host() const {
    static constexpr const char* api = "keel::pool_buffer::wait_for_host";
    B::synchronize(checked(api)->bound);
  }
  /// data() as a pointer to @p T. @throws keel::error invalid_handle if empty.
  template <class T>
  T* data_as() const {
    return static_cast<T*>(data());
  }
  /// The bytes asked for. @throws keel::error invalid_handle if empty.
  std::size_t size() const { return checked("keel::pool_buffer::size")->bytes; }
  /// The bytes reserved for it (its size class). @throws keel::error invalid_handle if empty.
  std::size_t capacity() const { return checked("keel::pool_buffer::capacity")->cls; }
  /// The stream its release is ordered on. @throws keel::error invalid_handle if empty.
  basic_stream_ref<B> stream() const {
    return basic_stream_ref<B>(detail::from_handle, checked("keel::pool_buffer::stream")->bound);
  }
  /** @brief A span sharing ownership of the allocation (for copies and kernel arguments). */
  memory_span span() const {
    detail::pool_block<B>* b = checked("keel::pool_buffer::span");
    std::shared_ptr<void> owner(b->data, detail::pool_span_owner<B>{pool_, b});  // may throw: nothing taken yet
    pool_->add_ref(b);
    return {b->data, b->bytes, pool_->kind(), std::move(owner)};
  }

  /**
   * @brief Releases the allocation in @p stream's order and leaves this
   * empty. @throws keel::error invalid_parameter when @p stream is not the
   * stream the allocation is ordered on (rebind() first: the caller orders
   * the new stream after every use), invalid_handle if empty; nothing changes then.
   */
  void release(basic_stream_ref<B> stream) {
    static constexpr const char* api = "keel::pool_buffer::release";
    detail::pool_block<B>* b = checked(api);
    if (detail::checked_handle(stream, api) != b->bound)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {pool_->pool_text(), ": wrong stream: the allocation is ordered on stream ",
                                      B::id_of(b->bound), ", released on stream ", stream.id(),
                                      " (rebind() it to that stream after ordering the stream behind its uses)"});
    reset();
  }
  /**
   * @brief Orders the allocation's release on @p stream from now on (the
   * caller has ordered @p stream after its uses, e.g. through an event).
   * @throws keel::error invalid_handle if empty or @p stream is empty.
   */
  void rebind(basic_stream_ref<B> stream) {
    static constexpr const char* api = "keel::pool_buffer::rebind";
    detail::pool_block<B>* b = checked(api);
    pool_->rebind(b, detail::checked_handle(stream, api));
  }
  /** @brief Releases the allocation in its stream's order; empty afterwards. Throws: nothing. */
  void reset() noexcept {
    if (b_ == nullptr) return;
    detail::pool_core<B>* pool = std::exchange(pool_, nullptr);
    detail::pool_block<B>* b = std::exchange(b_, nullptr);
    if (pool->release(b, b->bound)) detail::pool_core<B>::destroy(pool);
  }
  /// Exchanges what this and the other object hold.
  void swap(basic_pool_buffer& o) noexcept {
    std::swap(pool_, o.pool_);
    std::swap(b_, o.b_);
  }
  friend void swap(basic_pool_buffer& a, basic_pool_buffer& b) noexcept { a.swap(b); }
  /// Whether both hold the same allocation (or both are empty).
  friend bool operator==(const basic_pool_buffer& a, const basic_pool_buffer& b) noexcept { return a.b_ == b.b_; }
  /// Whether they hold different allocations.
  friend bool operator!=(const basic_pool_buffer& a, const basic_pool_buffer& b) noexcept { return !(a == b); }
  /// Whether the allocation came from @p pool.
  bool from(basic_memory_pool_ref<B> pool) const noexcept { return pool_ != nullptr && pool_ == pool.core_; }

 private:
  friend class basic_memory_pool_ref<B>;
  basic_pool_buffer(detail::pool_core<B>* pool, detail::pool_block<B>* b) noexcept : pool_(pool), b_(b) {}
  detail::pool_block<B>* checked(const char* api) const {
    if (b_ == nullptr) detail::throw_empty(api);
    return b_;
  }
  detail::pool_core<B>* pool_ = nullptr;
  detail::pool_block<B>* b_ = nullptr;
};

/**
 * @brief A non-owning view of a memory pool: everything but destruction.
 *
 * Ownership: none; the pool object must outlive the view. Thread safety:
 * every call is thread-safe (allocate and release from any thread and
 * stream). Exceptions: keel::error naming the pool and the rule broken; a
 * failed call changes nothing (strong guarantee).
 */
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_memory_pool_ref {
  static_assert(detail::memory_pool_layer::check<B>::value);  // names the missing call of the layers it needs

 public:
  /// An empty view.
  constexpr basic_memory_pool_ref() noexcept = default;

  /**
   * @brief An allocation of @p bytes whose release is ordered on @p stream:
   * reuses a block of its size class when the reuse rules allow it,
   * otherwise reserves one. On a stream capturing with this pool, the
   * allocation belongs to the model as well.
   * @throws keel::error out_of_memory (beyond max_size or the device's
   * memory; the pool is unchanged), invalid_handle for an empty view or stream.
   */
  basic_pool_buffer<B> allocate(basic_stream_ref<B> stream, std::size_t bytes) const {
    static constexpr const char* api = "keel::memory_pool::allocate";
    auto s = detail::checked_handle(stream, api);
    detail::pool_block<B>* b = core(api)->allocate(s, bytes);
    return basic_pool_buffer<B>(core_, b);
  }
  /**
   * @brief Releases @p buffer in @p stream's order. @throws keel::error
   * invalid_parameter naming the pool when the buffer comes from another
   * pool or @p stream is not its stream; nothing changes then.
   */
  void release(basic_pool_buffer<B>& buffer, basic_stream_ref<B> stream) const {
    static constexpr const char* api = "keel::memory_pool::release";
    core(api);
    if (buffer && buffer.pool_ != core_)
      ::keel::detail::throw_composed(
          errc::invalid_parameter, api,
          {core_->pool_text(), ": the allocation comes from another pool (", buffer.pool_->pool_text(), ")"});
    buffer.release(stream);
  }
  /**
   * @brief Frees idle memory until at most @p keep bytes are reserved
   * (idle blocks whose releases have not passed are freed behind them).
   * @throws keel::error invalid_parameter when @p keep is below the bytes in
   * use (the pool is unchanged).
   */
  void trim_to(std::size_t keep) const { core("keel::memory_pool::trim_to")->trim_to(keep); }
  /// The figures now. @throws keel::error invalid_handle for an empty view.
  pool_statistics statistics() const { return core("keel::memory_pool::statistics")->statistics(); }
  /// Restarts the high-water marks at the current figures. @throws keel::error invalid_handle for an empty view.
  void reset_high_water() const { core("keel::memory_pool::reset_high_water")->reset_high_water(); }
  /// The reuse rules and release threshold. @throws keel::error invalid_handle for an empty view.
  pool_attributes attributes() const { return core("keel::memory_pool::attributes")->attributes(); }
  /// Changes the reuse rules and the threshold (applied at once). @throws keel::error invalid_handle for an empty view.
  void set_attributes(const pool_attributes& a) const { core("keel::memory_pool::set_attributes")->set_attributes(a); }
  /// The pool's name, as diagnostics give it. @throws keel::error invalid_handle for an empty view.
  const std::string& name() const { return core("keel::memory_pool::name")->name(); }
  /// Device or pinned host memory. @throws keel::error invalid_handle for an empty view.
  memory_kind kind() const { return core("keel::memory_pool::kind")->kind(); }
  /**
   * @brief The runtime's own pool this pool reserves from (an aclrtMemPool
   * on ACL, when the runtime has the calls), or null when it is keel's own
   * over the backend's allocator. keel still owns the blocks it reserved:
   * hand the runtime's pool to code that allocates from it itself.
   * @throws keel::error invalid_handle for an empty view.
   */
  typename runtime_memory_pool<B>::handle native_handle() const {
    return core("keel::memory_pool::native_handle")->native_handle();
  }
  /// Whether this views a pool.
  constexpr explicit operator bool() const noexcept { return core_ != nullptr; }
  friend bool operator==(basic_memory_pool_ref a, basic_memory_pool_ref b) noexcept { return a.core_ == b.core_; }
  friend bool operator!=(basic_memory_pool_ref a, basic_memory_pool_ref b) noexcept { return a.core_ != b.core_; }

  /// @cond
  // What basic_capture_scope takes allocations of a capture from.
  std::shared_ptr<detail::capture_memory_source<B>> capture_source() const {
    detail::pool_core<B>* c = core("keel::capture_scope");
    c->hold();
    return std::shared_ptr<detail::capture_memory_source<B>>(c, [](detail::capture_memory_source<B>* p) {
      detail::pool_core<B>::unhold_and_delete(static_cast<detail::pool_core<B>*>(p));
    });
  }
  // Whether the pool object was destroyed while something still holds the
  // pool (a registration holding it through capture_source()).
  bool owner_destroyed() const noexcept { return core_ != nullptr && core_->owner_gone(); }
  /// @endcond

 private:
  friend class basic_memory_pool<B>;
  friend class basic_pool_buffer<B>;
  explicit basic_memory_pool_ref(detail::pool_core<B>* c) noexcept : core_(c) {}
  detail::pool_core<B>* core(const char* api) const {
    if (core_ == nullptr) detail::throw_empty(api);
    return core_;
  }
  detail::pool_core<B>* core_ = nullptr;
};

/**
 * @brief A stream-ordered memory pool (keel's own, over the memory and event
 * layers): allocations by size class, released in stream order and reused
 * under the pool's attributes, with statistics readable at any time.
 *
 * Destroying the pool while allocations, spans or models still hold its
 * memory is deferred: the pool takes no new allocations from its owner, and
 * its memory goes back to the backend when the last holder lets go.
 *
 * Ownership: unique (move-only; reset, swap); the memory it reserved is freed when the
 * pool and every holder are gone. Thread safety: every call is thread-safe.
 * Exceptions: as basic_memory_pool_ref; the constructor throws what
 * creating the pool's own stream throws; the destructor is noexcept.
 *
 * @code
 * keel::host::memory_pool pool{dev, {"activations"}};
 * auto x = pool.allocate(stream, 4096);          // released in stream's order when x goes
 * stream.launch(kind, kernel, x.span());
 * @endcode
 */
template <KEEL_MEMORY_POOL_BACKEND B>
class basic_memory_pool : public basic_memory_pool_ref<B> {
 public:
  /// The backend's device type.
  using device_type = typename B::device_type;
  /// An empty pool.
  basic_memory_pool() noexcept = default;
  /// A pool on @p dev with @p options (name, memory kind, max_size, attributes).
  explicit basic_memory_pool(device_type& dev, pool_options options = {})
      : basic_memory_pool_ref<B>(new detail::pool_core<B>(dev, std::move(options))) {}
  /// Takes the other pool; the other is left empty.
  basic_memory_pool(basic_memory_pool&& o) noexcept : basic_memory_pool_ref<B>(std::exchange(o.core_, nullptr)) {}
  /// Destroys this pool (deferred while held), then takes the other.
  basic_memory_pool& operator=(basic_memory_pool&& o) noexcept {
    if (this != &o) {
      reset();
      this->core_ = std::exchange(o.core_, nullptr);
    }
    return *this;
  }
  basic_memory_pool(const basic_memory_pool&) = delete;
  basic_memory_pool& operator=(const basic_memory_pool&) = delete;
  ~basic_memory_pool() { reset(); }

  /// A non-owning view.
  basic_memory_pool_ref<B> ref() const noexcept { return basic_memory_pool_ref<B>(this->core_); }
  /** @brief Destroys the pool now (deferred while its memory is held); empty afterwards. Throws: nothing. */
  void reset() noexcept {
    if (auto* c = std::exchange(this->core_, nullptr)) {
      c->owner_left();
      detail::pool_core<B>::unhold_and_delete(c);
    }
  }
  /// Exchanges what this and the other pool hold.
  void swap(basic_memory_pool& other) noexcept { std::swap(this->core_, other.core_); }
  /// Exchanges what @p a and @p b hold.
  friend void swap(basic_memory_pool& a, basic_memory_pool& b) noexcept { a.swap(b); }
  /** @brief Whether allocations, spans, models or capture scopes still hold the pool's memory. */
  bool held() const { return this->core("keel::memory_pool::held")->holders() > 1; }
};

KEEL_END_NAMESPACE  // namespace keel
