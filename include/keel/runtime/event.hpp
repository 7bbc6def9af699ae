// SPDX-License-Identifier: Apache-2.0
// basic_event (owning) and basic_event_ref (non-owning): default, timing and
// external events; and basic_external_event_pool, which reuses the scarce
// external ones.
#pragma once

#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/unique_handle.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

namespace keel {

/// @cond
namespace detail {

template <class B>
struct event_traits {
  using native_type = typename B::event_handle;
  static constexpr native_type null() noexcept { return native_type{}; }
  static void close(native_type h) noexcept { B::destroy_event(h); }
};

template <class Derived, class B>
class event_ops {
  static_assert(event_layer::check<B>::value);  // names the missing call of the event layer

 public:
  /** @brief Marks the stream's current position (external: signals it when reached). */
  void record(basic_stream_ref<B> stream) const {
    B::record(checked("keel::event::record"), stream.checked("keel::event::record"));
  }
  /**
   * @brief Whether the last record has been reached (external: whether signalled).
   * @throws keel::error capture_violation for an event recorded inside a
   * capture still in progress, when the capture mode refuses it.
   */
  bool query() const { return B::query(checked("keel::event::query")); }
  /** @brief Blocks until query() would be true. Same capture rule as query(). */
  void synchronize() const { B::synchronize(checked("keel::event::synchronize")); }
  /** @brief The flags the event was created with. */
  event_flags flags() const { return B::flags_of(checked("keel::event::flags")); }

  /// @cond
  typename B::event_handle checked(const char* api) const {
    auto h = static_cast<const Derived&>(*this).native_handle();
    if (h == typename B::event_handle{}) throw_empty(api);
    return h;
  }
  /// @endcond
};

}  // namespace detail
/// @endcond

/**
 * @brief A non-owning view of an event (adopted from elsewhere or made by a handle).
 *
 * Ownership: none; the event must outlive the view. Thread safety: calls may
 * come from any thread. Exceptions: calls throw keel::error.
 */
template <KEEL_EVENT_BACKEND B>
class basic_event_ref : public detail::event_ops<basic_event_ref<B>, B> {
 public:
  using native_handle_type = typename B::event_handle;
  constexpr basic_event_ref() noexcept = default;
  /** @brief Views a native event made elsewhere. @throws keel::error null_parameter. */
  static basic_event_ref adopt(native_handle_type native) {
    if (native == native_handle_type{}) throw_error(errc::null_parameter, "keel::event_ref::adopt", "null event");
    return basic_event_ref(native);
  }
  constexpr native_handle_type native_handle() const noexcept { return native_; }
  constexpr explicit operator bool() const noexcept { return native_ != native_handle_type{}; }

 private:
  template <KEEL_EVENT_BACKEND>
  friend class basic_event;
  constexpr explicit basic_event_ref(native_handle_type native) noexcept : native_(native) {}
  native_handle_type native_{};
};

/**
 * @brief An owning event. Work that still uses it (a pending wait, a model
 * that captured it) keeps it alive after the handle is destroyed.
 *
 * Ownership: unique (get, release, reset, swap); moved-from is empty.
 * Thread safety: calls may come from any thread; the handle is not
 * synchronised. Exceptions: calls throw keel::error; destructor noexcept.
 *
 * @code
 * keel::host::event done{dev};
 * done.record(producer);
 * consumer.wait(done);   // consumer's later work runs after producer's earlier work
 * @endcode
 */
template <KEEL_EVENT_BACKEND B>
class basic_event : public detail::event_ops<basic_event<B>, B> {
  using handle_type = unique_handle<detail::event_traits<B>>;

 public:
  using native_handle_type = typename B::event_handle;
  using device_type = typename B::device_type;

  basic_event() noexcept = default;
  /** @brief Creates an event. @throws keel::error resource_limit when no external event is left. */
  explicit basic_event(device_type& dev, event_flags flags = event_flags::default_)
      : handle_(B::create_event(dev, flags)) {}
  static basic_event adopt(native_handle_type native) {
    if (native == native_handle_type{}) throw_error(errc::null_parameter, "keel::event::adopt", "null event");
    basic_event e;
    e.handle_.reset(native);
    return e;
  }
  basic_event(basic_event&&) noexcept = default;
  basic_event& operator=(basic_event&&) noexcept = default;

  native_handle_type native_handle() const noexcept { return handle_.get(); }
  native_handle_type get() const noexcept { return handle_.get(); }
  native_handle_type release() noexcept { return handle_.release(); }
  void reset(native_handle_type native = native_handle_type{}) noexcept { handle_.reset(native); }
  explicit operator bool() const noexcept { return static_cast<bool>(handle_); }
  void swap(basic_event& other) noexcept { handle_.swap(other.handle_); }
  friend void swap(basic_event& a, basic_event& b) noexcept { a.swap(b); }
  basic_event_ref<B> ref() const noexcept { return basic_event_ref<B>(handle_.get()); }
  operator basic_event_ref<B>() const noexcept { return ref(); }

 private:
  handle_type handle_;
};

/**
 * @brief Milliseconds between two completed timing events.
 * @throws keel::error invalid_parameter (not timing events) or invalid_state (not completed).
 */
template <class B>
float elapsed_time(basic_event_ref<B> start, basic_event_ref<B> end) {
  return B::elapsed_ms(start.checked("keel::elapsed_time"), end.checked("keel::elapsed_time"));
}

template <KEEL_EVENT_BACKEND B>
class basic_external_event_pool;

/**
 * @brief An external event on loan from a pool; returns to it when destroyed.
 *
 * Ownership: unique loan; the pool must outlive it. Keep the loan as long as
 * any model that captured the event. Thread safety: as basic_event_ref.
 * Exceptions: the destructor is noexcept.
 */
template <KEEL_EVENT_BACKEND B>
class basic_pooled_event : public detail::event_ops<basic_pooled_event<B>, B> {
 public:
  using native_handle_type = typename B::event_handle;
  basic_pooled_event() noexcept = default;
  basic_pooled_event(basic_pooled_event&& o) noexcept
      : pool_(std::exchange(o.pool_, nullptr)), event_(std::move(o.event_)) {}
  basic_pooled_event& operator=(basic_pooled_event&& o) noexcept {
    basic_pooled_event tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~basic_pooled_event() { give_back(); }
  native_handle_type native_handle() const noexcept { return event_.native_handle(); }
  explicit operator bool() const noexcept { return static_cast<bool>(event_); }
  void swap(basic_pooled_event& o) noexcept {
    std::swap(pool_, o.pool_);
    event_.swap(o.event_);
  }
  basic_event_ref<B> ref() const noexcept { return event_.ref(); }
  operator basic_event_ref<B>() const noexcept { return ref(); }

 private:
  friend class basic_external_event_pool<B>;
  basic_pooled_event(basic_external_event_pool<B>* pool, basic_event<B> event) noexcept
      : pool_(pool), event_(std::move(event)) {}
  void give_back() noexcept;
  basic_external_event_pool<B>* pool_ = nullptr;
  basic_event<B> event_;
};

/**
 * @brief Reuses external events, which devices have few of: acquire() hands
 * out a loan, reset on the caller's stream so it starts unsignalled.
 *
 * Ownership: owns the idle events; must outlive its loans. Thread safety:
 * acquire and returns are thread-safe. Exceptions: acquire throws
 * keel::error resource_limit when the pool's capacity (or the device's
 * limit) is reached; the pool is unchanged.
 */
template <KEEL_EVENT_BACKEND B>
class basic_external_event_pool {
 public:
  using device_type = typename B::device_type;
  basic_external_event_pool(device_type& dev, std::size_t capacity) : device_(&dev), capacity_(capacity) {}
  basic_external_event_pool(const basic_external_event_pool&) = delete;
  basic_external_event_pool& operator=(const basic_external_event_pool&) = delete;

  /** @brief A loaned external event, reset on @p stream (in stream order) before it is handed out. */
  basic_pooled_event<B> acquire(basic_stream_ref<B> stream) {
    basic_event<B> e;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!idle_.empty()) {
        e = std::move(idle_.back());
        idle_.pop_back();
      } else if (made_ < capacity_) {
        e = basic_event<B>(*device_, event_flags::external);
        ++made_;
      } else {
        throw_error(errc::resource_limit, "keel::external_event_pool::acquire",
                    "all " + std::to_string(capacity_) + " external events of the pool are on loan");
      }
    }
    stream.reset_event(e);
    return basic_pooled_event<B>(this, std::move(e));
  }

  std::size_t capacity() const noexcept { return capacity_; }
  /** @brief Events made so far (on loan or idle). */
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return made_;
  }
  /** @brief Events idle in the pool. */
  std::size_t idle() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return idle_.size();
  }

 private:
  friend class basic_pooled_event<B>;
  void give_back(basic_event<B> e) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      idle_.push_back(std::move(e));
    } catch (...) {
      --made_;  // could not keep it: let it be destroyed
    }
  }
  device_type* device_;
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::size_t made_ = 0;
  std::vector<basic_event<B>> idle_;
};

template <KEEL_EVENT_BACKEND B>
void basic_pooled_event<B>::give_back() noexcept {
  if (pool_ && event_) pool_->give_back(std::move(event_));
  pool_ = nullptr;
}

}  // namespace keel
