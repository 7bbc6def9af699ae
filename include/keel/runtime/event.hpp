// SPDX-License-Identifier: Apache-2.0
// basic_event (owning) and basic_event_ref (non-owning): default, timing and
// external events; and basic_external_event_pool, which reuses the scarce
// external ones.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/unique_handle.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

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
  /**
   * @brief synchronize(), bounded: @throws keel::error timeout when the
   * record (external: the signal) has not come within @p timeout; the event
   * is unchanged.
   */
  template <class Rep, class Period>
  void synchronize(std::chrono::duration<Rep, Period> timeout) const {
    B::synchronize_for(checked("keel::event::synchronize"), detail::to_wait_budget(timeout));
  }
  /** @brief The flags the event was created with. */
  event_flags flags() const { return B::flags_of(checked("keel::event::flags")); }

  typename B::event_handle checked(const char* api) const {
    auto h = static_cast<const Derived&>(*this).native_handle();
    if (h == typename B::event_handle{}) throw_empty(api);
    return h;
  }
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
  /// The backend's native handle type.
  using native_handle_type = typename B::event_handle;
  constexpr basic_event_ref() noexcept = default;
  /** @brief Views a native event made elsewhere. @throws keel::error null_parameter. */
  static basic_event_ref adopt(native_handle_type native) {
    if (native == native_handle_type{}) throw_error(errc::null_parameter, "keel::event_ref::adopt", "null event");
    return basic_event_ref(native);
  }
  /// The native handle, null when empty.
  constexpr native_handle_type native_handle() const noexcept { return native_; }
  /// Whether this holds a handle.
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
  /// The backend's native handle type.
  using native_handle_type = typename B::event_handle;
  /// The backend's device type.
  using device_type = typename B::device_type;

  basic_event() noexcept = default;
  /** @brief Creates an event. @throws keel::error resource_limit when no external event is left. */
  explicit basic_event(device_type& dev, event_flags flags = event_flags::default_)
      : handle_(B::create_event(dev, flags)) {}
  /// Takes ownership of @p native, made elsewhere. @throws keel::error null_parameter for a null handle.
  static basic_event adopt(native_handle_type native) {
    if (native == native_handle_type{}) throw_error(errc::null_parameter, "keel::event::adopt", "null event");
    basic_event e;
    e.handle_.reset(native);
    return e;
  }
  /// Takes the other object's handle; the other is left empty.
  basic_event(basic_event&&) noexcept = default;
  /// Releases what this holds, then takes the other object's handle; the other is left empty.
  basic_event& operator=(basic_event&&) noexcept = default;

  /// The native handle, null when empty.
  native_handle_type native_handle() const noexcept { return handle_.get(); }
  /// The native handle, null when empty.
  native_handle_type get() const noexcept { return handle_.get(); }
  /// Gives up ownership: returns the handle and leaves this empty; the caller destroys it.
  native_handle_type release() noexcept { return handle_.release(); }
  /// Destroys the handle held (if any) and takes ownership of @p native instead.
  void reset(native_handle_type native = native_handle_type{}) noexcept { handle_.reset(native); }
  /// Whether this holds a handle.
  explicit operator bool() const noexcept { return static_cast<bool>(handle_); }
  /// Exchanges what this and the other object hold.
  void swap(basic_event& other) noexcept { handle_.swap(other.handle_); }
  friend void swap(basic_event& a, basic_event& b) noexcept { a.swap(b); }
  /// A non-owning view of the same handle.
  basic_event_ref<B> ref() const noexcept { return basic_event_ref<B>(handle_.get()); }
  /// Converts to a non-owning view of the same handle.
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

/// @cond
namespace detail {
// A pool's books, shared with its loans: a loan that comes back after the
// pool is gone finds them closed (and destroys its event) instead of freed memory.
template <class B>
struct external_event_books {
  void give_back(basic_event<B> e) noexcept {
    std::unique_lock<std::mutex> lock(mutex);
    if (!open) {
      --made;
      lock.unlock();
      return;  // e is destroyed here, outside the lock
    }
    try {
      idle.push_back(std::move(e));
    } catch (...) {
      --made;  // could not keep it: let it be destroyed
    }
  }
  std::mutex mutex;
  std::size_t made = 0;
  std::vector<basic_event<B>> idle;
  bool open = true;
};
}  // namespace detail
/// @endcond

/**
 * @brief An external event on loan from a pool; returns to it when destroyed.
 *
 * Ownership: unique loan; shares the pool's books, so it may outlive the
 * pool (it then destroys its event). Keep the loan as long as any model
 * that captured the event. Thread safety: as basic_event_ref.
 * Exceptions: the destructor is noexcept.
 */
template <KEEL_EVENT_BACKEND B>
class basic_pooled_event : public detail::event_ops<basic_pooled_event<B>, B> {
 public:
  /// The backend's native handle type.
  using native_handle_type = typename B::event_handle;
  basic_pooled_event() noexcept = default;
  /// Takes the other object's handle; the other is left empty.
  basic_pooled_event(basic_pooled_event&& o) noexcept : books_(std::move(o.books_)), event_(std::move(o.event_)) {}
  /// Releases what this holds, then takes the other object's handle; the other is left empty.
  basic_pooled_event& operator=(basic_pooled_event&& o) noexcept {
    basic_pooled_event tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~basic_pooled_event() { give_back(); }
  /// The native handle, null when empty.
  native_handle_type native_handle() const noexcept { return event_.native_handle(); }
  /// Whether this holds a handle.
  explicit operator bool() const noexcept { return static_cast<bool>(event_); }
  /// Exchanges what this and the other object hold.
  void swap(basic_pooled_event& o) noexcept {
    books_.swap(o.books_);
    event_.swap(o.event_);
  }
  /// A non-owning view of the same handle.
  basic_event_ref<B> ref() const noexcept { return event_.ref(); }
  /// Converts to a non-owning view of the same handle.
  operator basic_event_ref<B>() const noexcept { return ref(); }

 private:
  friend class basic_external_event_pool<B>;
  basic_pooled_event(std::shared_ptr<detail::external_event_books<B>> books, basic_event<B> event) noexcept
      : books_(std::move(books)), event_(std::move(event)) {}
  void give_back() noexcept;
  std::shared_ptr<detail::external_event_books<B>> books_;
  basic_event<B> event_;
};

/**
 * @brief Reuses external events, which devices have few of: acquire() hands
 * out a loan, reset on the caller's stream so it starts unsignalled.
 *
 * Ownership: owns the idle events; its loans share its books, so the pool
 * may be destroyed while events are on loan: it destroys the idle ones, and
 * each loan destroys its event when it ends instead of returning it.
 * Thread safety: acquire and returns are thread-safe. Exceptions: acquire
 * throws keel::error resource_limit when the pool's capacity (or the
 * device's limit) is reached (the pool is unchanged), or what resetting the
 * event throws (the event is idle in the pool).
 */
template <KEEL_EVENT_BACKEND B>
class basic_external_event_pool {
 public:
  /// The backend's device type.
  using device_type = typename B::device_type;
  /// A pool of up to @p capacity external events of @p dev, made as they are first acquired.
  basic_external_event_pool(device_type& dev, std::size_t capacity) : device_(&dev), capacity_(capacity) {}
  basic_external_event_pool(const basic_external_event_pool&) = delete;
  basic_external_event_pool& operator=(const basic_external_event_pool&) = delete;
  ~basic_external_event_pool() {
    std::vector<basic_event<B>> idle;
    {
      std::lock_guard<std::mutex> lock(books_->mutex);
      books_->open = false;
      books_->made -= books_->idle.size();
      idle.swap(books_->idle);
    }
  }  // the idle events are destroyed here, outside the lock

  /** @brief A loaned external event, reset on @p stream (in stream order) before it is handed out. */
  basic_pooled_event<B> acquire(basic_stream_ref<B> stream) {
    basic_event<B> e;
    {
      std::lock_guard<std::mutex> lock(books_->mutex);
      if (!books_->idle.empty()) {
        e = std::move(books_->idle.back());
        books_->idle.pop_back();
      } else if (books_->made < capacity_) {
        e = basic_event<B>(*device_, event_flags::external);
        ++books_->made;
      } else {
        throw_error(errc::resource_limit, "keel::external_event_pool::acquire",
                    "all " + std::to_string(capacity_) + " external events of the pool are on loan");
      }
    }
    basic_pooled_event<B> loan(books_, std::move(e));  // a failed reset gives the event back
    stream.reset_event(loan);
    return loan;
  }

  /// How many external events the pool holds.
  std::size_t capacity() const noexcept { return capacity_; }
  /** @brief Events made so far (on loan or idle). */
  std::size_t size() const {
    std::lock_guard<std::mutex> lock(books_->mutex);
    return books_->made;
  }
  /** @brief Events idle in the pool. */
  std::size_t idle() const {
    std::lock_guard<std::mutex> lock(books_->mutex);
    return books_->idle.size();
  }

 private:
  device_type* device_;
  std::size_t capacity_;
  std::shared_ptr<detail::external_event_books<B>> books_ = std::make_shared<detail::external_event_books<B>>();
};

template <KEEL_EVENT_BACKEND B>
void basic_pooled_event<B>::give_back() noexcept {
  if (books_ && event_) books_->give_back(std::move(event_));
  books_.reset();
}

KEEL_END_NAMESPACE  // namespace keel
