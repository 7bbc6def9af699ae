// SPDX-License-Identifier: Apache-2.0
// basic_event (owning) and basic_event_ref (non-owning): default, timing and
// external events; and basic_external_event_pool, which reuses the scarce
// external ones.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
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
    B::record(checked("keel::event::record"), checked_handle(stream, "keel::event::record"));
  }
  /**
   * @brief record() with an operation flag: event_operation::external records
   * the event inside the capture on @p stream so that the model's record is
   * visible outside it (a stream or another model waits on it); each
   * execution makes the record when it is issued, completed when the model
   * reaches it, and a plain record of the event made later (after the
   * capture) replaces it as the event's last record for whatever waits
   * afterwards. event_operation::default_ is record(). Offered when the
   * backend has external operations.
   * @throws keel::error invalid_parameter (not a default event),
   * capture_violation (the stream is not capturing, or the same capture waits
   * on the event externally), invalid_state (a plain record recorded the
   * event before: CANN refuses it); the event and the capture are unchanged.
   */
  template <class EB = B>
  auto record(basic_stream_ref<B> stream, event_operation op) const
      -> decltype(EB::record_external(std::declval<typename EB::event_handle>(),
                                      std::declval<typename EB::stream_handle>())) {
    if (op == event_operation::default_) return record(stream);
    EB::record_external(checked("keel::event::record"), checked_handle(stream, "keel::event::record"));
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
  /**
   * @brief Clears an external event's signal in @p stream's order: waits
   * issued after it wait for the next record (CANN's aclrtResetEvent,
   * torch_npu's Event.reset(stream); stream.reset_event(event) is the same
   * call). The event lives on: this is not an owner's reset(), which
   * destroys the event as unique_ptr's reset() does. Captured as a task
   * while the stream captures. Offered when the backend has the event layer.
   * @throws keel::error invalid_parameter for an event that is not external,
   * update_violation on a stream that stages an update; the event is unchanged.
   */
  template <class EB = B>
  auto clear_signal(basic_stream_ref<B> stream) const
      -> decltype(EB::reset(std::declval<typename EB::stream_handle>(), std::declval<typename EB::event_handle>())) {
    EB::reset(checked_handle(stream, "keel::event::clear_signal"), checked("keel::event::clear_signal"));
  }


 private:
  typename B::event_handle checked(const char* api) const {
    return checked_handle(static_cast<const Derived&>(*this), api);
  }
};

}  // namespace detail
/// @endcond

/**
 * @brief A non-owning view of an event: of a keel event (basic_event and
 * basic_pooled_event are views too, by derivation), or of a native event
 * made elsewhere, from its native handle.
 *
 * Ownership: none; the event must outlive the view. Thread safety: calls may
 * come from any thread; the view itself is a value. Exceptions: calls throw keel::error.
 */
template <KEEL_EVENT_BACKEND B>
class basic_event_ref : public detail::event_ops<basic_event_ref<B>, B> {
  using native_of = detail::native_of<B, typename B::event_handle>;

 public:
  /// The vendor's event handle (aclrtEvent on ACL; the backend's own handle where it has no vendor).
  using native_handle_type = typename native_of::type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  constexpr basic_event_ref() noexcept = default;
  /**
   * @brief Views @p native, an event of @p dev made elsewhere (or a keel
   * event's native_handle()); keel never destroys it. Every view of one
   * native event is equal. An event keel does not know yet is taken to have
   * the default flags: say them with the other constructor.
   * @throws keel::error null_parameter; invalid_parameter when the backend
   * can tell it is not an event of @p dev.
   */
  basic_event_ref(device_type& dev, native_handle_type native)
      : handle_(view(dev, native, std::nullopt, "keel::event_ref")) {}
  /**
   * @brief Views @p native, made with @p flags (a runtime such as ACL cannot
   * be asked them). @throws keel::error null_parameter; invalid_parameter
   * when keel knows the event with other flags.
   */
  basic_event_ref(device_type& dev, native_handle_type native, event_flags flags)
      : handle_(view(dev, native, flags, "keel::event_ref")) {}
  basic_event_ref(device_type&, std::nullptr_t) = delete;               ///< a null event is no event to view
  basic_event_ref(device_type&, int) = delete;                          ///< 0 is no event to view
  basic_event_ref(device_type&, std::nullptr_t, event_flags) = delete;  ///< a null event is no event to view
  basic_event_ref(device_type&, int, event_flags) = delete;             ///< 0 is no event to view

  /// The vendor's native handle (aclrtEvent on ACL), null when empty.
  native_handle_type native_handle() const noexcept { return native_of::to(handle_); }
  /// Whether this holds a handle.
  constexpr explicit operator bool() const noexcept { return handle_ != typename B::event_handle{}; }
  /// Whether both view the same event (or both are empty).
  friend constexpr bool operator==(const basic_event_ref& a, const basic_event_ref& b) noexcept {
    return a.handle_ == b.handle_;
  }
  /// Whether they view different events.
  friend constexpr bool operator!=(const basic_event_ref& a, const basic_event_ref& b) noexcept {
    return !(a == b);
  }

  /// @cond
  constexpr basic_event_ref(detail::from_handle_t, typename B::event_handle h) noexcept : handle_(h) {}
  /// @endcond

 protected:
  /// @cond
  static typename B::event_handle view(device_type& dev, native_handle_type native, std::optional<event_flags> flags,
                                       const char* api, adoption how = adoption::view) {
    auto h = detail::view_native<B, typename B::event_handle>(dev, native, how, api, "event", flags);
    // (A backend with records checks this itself before it takes anything.)
    if (flags && B::flags_of(h) != *flags)
      throw_error(errc::invalid_parameter, api, "the event was made with other flags");
    return h;
  }

  typename B::event_handle handle_{};  // the backend's handle (its record of the event); null when empty
  /// @endcond

 private:
  friend struct detail::handle_access;
};

/**
 * @brief An owning event. Work that still uses it (a pending wait, a model
 * that captured it) keeps it alive after the handle is destroyed. It is a
 * basic_event_ref too, so whatever takes a view takes the event.
 *
 * Ownership: unique (release, reset, swap); moved-from is empty. Never assign
 * to it through a reference to its basic_event_ref base. Thread safety:
 * calls may come from any thread; the handle is not synchronised.
 * Exceptions: calls throw keel::error; destructor noexcept.
 *
 * @code
 * keel::host::event done{dev};
 * done.record(producer);
 * consumer.wait(done);   // consumer's later work runs after producer's earlier work
 * @endcode
 */
template <KEEL_EVENT_BACKEND B>
class basic_event : public basic_event_ref<B> {
  using base = basic_event_ref<B>;
  using traits = detail::event_traits<B>;
  using native_of = detail::native_of<B, typename B::event_handle>;

 public:
  /// The vendor's event handle (see basic_event_ref).
  using native_handle_type = typename base::native_handle_type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  basic_event() noexcept = default;
  /** @brief Creates an event. @throws keel::error resource_limit when no external event is left. */
  explicit basic_event(device_type& dev, event_flags flags = event_flags::default_)
      : base(detail::from_handle, B::create_event(dev, flags)) {}
  /**
   * @brief Takes ownership of @p native, an event of @p dev made elsewhere
   * with @p flags (or one release() gave up): destroying the result destroys
   * it. @throws keel::error null_parameter; invalid_parameter when keel
   * knows it with other flags, or when a keel event owns it already where
   * the backend can tell (ACL's registry can; the host backend cannot).
   */
  static basic_event from_native_handle(device_type& dev, native_handle_type native,
                                        event_flags flags = event_flags::default_) {
    return basic_event(base::view(dev, native, flags, "keel::event::from_native_handle", adoption::own));
  }
  static basic_event from_native_handle(device_type&, std::nullptr_t, event_flags = {}) = delete;  ///< no event to own
  static basic_event from_native_handle(device_type&, int, event_flags = {}) = delete;             ///< no event to own

  /// Takes the other object's handle; the other is left empty.
  basic_event(basic_event&& o) noexcept : base(detail::from_handle, std::exchange(o.handle_, {})) {}
  /// Releases what this holds, then takes the other object's handle; the other is left empty.
  basic_event& operator=(basic_event&& o) noexcept {
    detail::replace_owned<traits>(this->handle_, std::exchange(o.handle_, {}));
    return *this;
  }
  basic_event(const basic_event&) = delete;
  basic_event& operator=(const basic_event&) = delete;
  ~basic_event() { reset(); }

  /// Gives up ownership: returns the native event and leaves this empty; the caller destroys it (or gives it back).
  [[nodiscard]] native_handle_type release() noexcept { return native_of::release(std::exchange(this->handle_, {})); }
  /**
   * @brief Destroys the event held (if any); this is left empty, as
   * unique_ptr's reset() does. Not CANN's aclrtResetEvent nor torch_npu's
   * Event.reset(stream), which clear an event's signal and keep the event:
   * that is clear_signal(stream).
   */
  void reset() noexcept { detail::replace_owned<traits>(this->handle_, typename B::event_handle{}); }
  /// Exchanges what this and the other object hold.
  void swap(basic_event& other) noexcept { std::swap(this->handle_, other.handle_); }
  friend void swap(basic_event& a, basic_event& b) noexcept { a.swap(b); }
  /// A non-owning view (the event is one already: this copies it as a plain view).
  basic_event_ref<B> ref() const noexcept { return *this; }

 private:
  template <KEEL_EVENT_BACKEND>
  friend class basic_pooled_event;
  explicit basic_event(typename B::event_handle h) noexcept : base(detail::from_handle, h) {}
};

/**
 * @brief Milliseconds between two completed timing events (events, views or
 * pooled events: each is a basic_event_ref).
 * @throws keel::error invalid_parameter (not timing events) or invalid_state (not completed).
 */
template <class B>
float elapsed_time(basic_event_ref<B> start, basic_event_ref<B> end) {
  return B::elapsed_ms(detail::checked_handle(start, "keel::elapsed_time"),
                       detail::checked_handle(end, "keel::elapsed_time"));
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
  // A loan released (basic_pooled_event::release): its event leaves the pool for good.
  void forget_one() noexcept {
    std::lock_guard<std::mutex> lock(mutex);
    --made;
  }
  std::mutex mutex;
  std::size_t made = 0;
  std::vector<basic_event<B>> idle;
  bool open = true;
};
}  // namespace detail
/// @endcond

/**
 * @brief An external event on loan from a pool; returns to it when destroyed
 * (or reset). It is a basic_event_ref too, so whatever takes a view takes it.
 *
 * Ownership: unique loan (release, reset, swap); shares the pool's books, so
 * it may outlive the pool (it then destroys its event). Keep the loan as
 * long as any model that captured the event. Thread safety: as
 * basic_event_ref. Exceptions: every member is noexcept.
 */
template <KEEL_EVENT_BACKEND B>
class basic_pooled_event : public basic_event_ref<B> {
  using base = basic_event_ref<B>;

 public:
  /// The vendor's event handle (see basic_event_ref).
  using native_handle_type = typename base::native_handle_type;
  basic_pooled_event() noexcept = default;
  /// Takes the other object's loan; the other is left empty.
  basic_pooled_event(basic_pooled_event&& o) noexcept
      : base(detail::from_handle, std::exchange(o.handle_, {})), books_(std::move(o.books_)) {}
  /// Returns what this holds to its pool, then takes the other object's loan; the other is left empty.
  basic_pooled_event& operator=(basic_pooled_event&& o) noexcept {
    basic_pooled_event tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  basic_pooled_event(const basic_pooled_event&) = delete;
  basic_pooled_event& operator=(const basic_pooled_event&) = delete;
  ~basic_pooled_event() { reset(); }

  /**
   * @brief Ends the loan without returning the event: the pool counts it as
   * gone (it may make another), and the caller owns the event.
   */
  [[nodiscard]] basic_event<B> release() noexcept {
    if (books_ && this->handle_ != typename B::event_handle{}) books_->forget_one();
    books_.reset();
    return basic_event<B>(std::exchange(this->handle_, {}));
  }
  /**
   * @brief Returns the event to its pool (or destroys it, when the pool is
   * gone); this is left empty. To clear the event's signal and keep the loan
   * (CANN's aclrtResetEvent), call clear_signal(stream).
   */
  void reset() noexcept;
  /// Exchanges what this and the other object hold.
  void swap(basic_pooled_event& o) noexcept {
    std::swap(this->handle_, o.handle_);
    books_.swap(o.books_);
  }
  friend void swap(basic_pooled_event& a, basic_pooled_event& b) noexcept { a.swap(b); }
  /// A non-owning view (the loan is one already: this copies it as a plain view).
  basic_event_ref<B> ref() const noexcept { return *this; }

 private:
  friend class basic_external_event_pool<B>;
  basic_pooled_event(std::shared_ptr<detail::external_event_books<B>> books, basic_event<B> event) noexcept
      : base(detail::from_handle, std::exchange(event.handle_, {})), books_(std::move(books)) {}
  std::shared_ptr<detail::external_event_books<B>> books_;
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
        ::keel::detail::throw_composed(errc::resource_limit, "keel::external_event_pool::acquire",
                                       {"all ", capacity_, " external events of the pool are on loan"});
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
void basic_pooled_event<B>::reset() noexcept {
  basic_event<B> event(std::exchange(this->handle_, {}));
  if (books_ && event) books_->give_back(std::move(event));
  books_.reset();
}  // without books (the loan was released or never made), the event is destroyed here

KEEL_END_NAMESPACE  // namespace keel
