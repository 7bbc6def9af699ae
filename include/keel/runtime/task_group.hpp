// SPDX-License-Identifier: Apache-2.0
// Task groups: basic_task_group (owning) and its view, the scope that marks
// one during capture, the scope that updates one, and
// basic_concurrent_update, the external-event protocol that updates a group
// while its model runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <thread>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/core/scope_guard.hpp"
#include "keel/core/unique_handle.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/event.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {

template <class B>
struct group_traits {
  using native_type = typename B::group_handle;
  static constexpr native_type null() noexcept { return native_type{}; }
  static void close(native_type h) noexcept { B::destroy_group(h); }
};

template <class Derived, class B>
class group_ops {
  static_assert(task_group_layer::check<B>::value);  // names the missing call of the task-group layer

 public:
  /** @brief The number of tasks (operator launches) in the group. */
  std::size_t size() const { return B::group_size(checked("keel::task_group::size")); }
  /** @brief Whether the model the group belongs to is alive (an update needs it). */
  bool model_alive() const { return B::group_model_alive(checked("keel::task_group::model_alive")); }


 private:
  typename B::group_handle checked(const char* api) const {
    return checked_handle(static_cast<const Derived&>(*this), api);
  }
};

}  // namespace detail
/// @endcond

/**
 * @brief A non-owning view of a task group: of a keel task group (every
 * basic_task_group is one, by derivation), or, from its native handle, of a
 * group keel marked.
 *
 * Ownership: none; the group handle must outlive the view. Thread safety:
 * any thread; the view itself is a value. Exceptions: calls throw keel::error.
 */
template <KEEL_TASK_GROUP_BACKEND B>
class basic_task_group_ref : public detail::group_ops<basic_task_group_ref<B>, B> {
  using native_of = detail::native_of<B, typename B::group_handle>;

 public:
  /// The vendor's task-group handle (aclrtTaskGrp on ACL; the backend's own handle where it has no vendor).
  using native_handle_type = typename native_of::type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  constexpr basic_task_group_ref() noexcept = default;
  /**
   * @brief Views @p native, a task group of @p dev keel marked (a group's
   * native_handle(), or one its release() gave up); keel never destroys it.
   * @throws keel::error null_parameter; invalid_parameter for a group keel
   * did not mark, where the backend can tell.
   */
  basic_task_group_ref(device_type& dev, native_handle_type native)
      : handle_(view(dev, native, "keel::task_group_ref")) {}
  basic_task_group_ref(device_type&, std::nullptr_t) = delete;  ///< a null group is no group to view
  basic_task_group_ref(device_type&, int) = delete;             ///< 0 is no group to view

  /// The vendor's native handle (aclrtTaskGrp on ACL), null when empty.
  native_handle_type native_handle() const noexcept { return native_of::to(handle_); }
  /// Whether this holds a handle.
  constexpr explicit operator bool() const noexcept { return handle_ != typename B::group_handle{}; }
  /// Whether both view the same group (or both are empty).
  friend constexpr bool operator==(const basic_task_group_ref& a, const basic_task_group_ref& b) noexcept {
    return a.handle_ == b.handle_;
  }
  /// Whether they view different groups.
  friend constexpr bool operator!=(const basic_task_group_ref& a, const basic_task_group_ref& b) noexcept {
    return !(a == b);
  }

  /// @cond
  constexpr basic_task_group_ref(detail::from_handle_t, typename B::group_handle h) noexcept : handle_(h) {}
  /// @endcond

 protected:
  /// @cond
  static typename B::group_handle view(device_type& dev, native_handle_type native, const char* api,
                                       adoption how = adoption::view) {
    return detail::view_native<B, typename B::group_handle>(dev, native, how, api, "task group");
  }

  typename B::group_handle handle_{};  // the backend's handle (its record of the group); null when empty
  /// @endcond

 private:
  friend struct detail::handle_access;
};

/**
 * @brief An owning handle to a task group marked during capture: the
 * operator launches an update may replace. The group lives inside its model;
 * this handle keeps the group's record (not the model) alive, so updating
 * after the model is destroyed is a clear error, never a crash. It is a
 * basic_task_group_ref too, so whatever takes a view takes the group.
 *
 * Ownership: unique (release, reset, swap). Never assign to it through a
 * reference to its basic_task_group_ref base. Thread safety: any thread;
 * the handle is not synchronised. Exceptions: calls throw keel::error.
 */
template <KEEL_TASK_GROUP_BACKEND B>
class basic_task_group : public basic_task_group_ref<B> {
  using base = basic_task_group_ref<B>;
  using traits = detail::group_traits<B>;
  using native_of = detail::native_of<B, typename B::group_handle>;

 public:
  /// The vendor's task-group handle (see basic_task_group_ref).
  using native_handle_type = typename base::native_handle_type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  basic_task_group() noexcept = default;
  /**
   * @brief Takes ownership of @p native, a task group of @p dev keel marked
   * that release() gave up. @throws keel::error null_parameter;
   * invalid_parameter when a keel group owns it already, or for a group keel
   * did not mark, where the backend can tell.
   */
  static basic_task_group from_native_handle(device_type& dev, native_handle_type native) {
    return basic_task_group(base::view(dev, native, "keel::task_group::from_native_handle", adoption::own));
  }
  static basic_task_group from_native_handle(device_type&, std::nullptr_t) = delete;  ///< no group to own
  static basic_task_group from_native_handle(device_type&, int) = delete;             ///< no group to own

  /// Takes the other object's handle; the other is left empty.
  basic_task_group(basic_task_group&& o) noexcept : base(detail::from_handle, std::exchange(o.handle_, {})) {}
  /// Releases what this holds, then takes the other object's handle; the other is left empty.
  basic_task_group& operator=(basic_task_group&& o) noexcept {
    detail::replace_owned<traits>(this->handle_, std::exchange(o.handle_, {}));
    return *this;
  }
  basic_task_group(const basic_task_group&) = delete;
  basic_task_group& operator=(const basic_task_group&) = delete;
  ~basic_task_group() { reset(); }

  /// Gives up ownership: returns the native group and leaves this empty; the caller destroys it (or gives it back).
  [[nodiscard]] native_handle_type release() noexcept { return native_of::release(std::exchange(this->handle_, {})); }
  /// Destroys the handle held (if any); this is left empty.
  void reset() noexcept { detail::replace_owned<traits>(this->handle_, typename B::group_handle{}); }
  /// Exchanges what this and the other object hold.
  void swap(basic_task_group& other) noexcept { std::swap(this->handle_, other.handle_); }
  friend void swap(basic_task_group& a, basic_task_group& b) noexcept { a.swap(b); }
  /// A non-owning view (the group is one already: this copies it as a plain view).
  basic_task_group_ref<B> ref() const noexcept { return *this; }

 private:
  template <KEEL_TASK_GROUP_BACKEND>
  friend class basic_task_group_scope;
  explicit basic_task_group(typename B::group_handle h) noexcept : base(detail::from_handle, h) {}
  // What a task-group scope's end() makes of the backend's new group.
  static basic_task_group adopt(typename B::group_handle h) noexcept { return basic_task_group(h); }
};

/**
 * @brief Marks a task group on a capturing stream from construction to end():
 * only operator launches may be issued to the stream meanwhile, and no other
 * capturing stream may issue work.
 *
 * Finishes as every keel scope does (see basic_capture_scope): end()
 * returns the group's handle; cancel() closes the group without one (a
 * runtime cannot take captured work back: the launches marked stay in the
 * capture, as plain tasks no update can reach); left without either, the
 * scope cancels and, left by a normal return, reports "left without end()
 * or cancel()" to keel's error handler (left by an exception, nothing; if
 * the exception leaves the capture scope too, that scope discards the
 * whole capture).
 *
 * Ownership: holds the open group; not copyable or movable. Thread safety:
 * one per stream. Exceptions: the constructor throws capture_violation (not
 * capturing, a group already open); end() throws invalid_state (ended,
 * cancelled, or the stream is not marking) and leaves the scope active;
 * cancel() and the destructor throw nothing.
 */
template <KEEL_TASK_GROUP_BACKEND B>
class [[nodiscard]] basic_task_group_scope {
  static_assert(detail::task_group_layer::check<B>::value);  // names the missing call of the task-group layer

 public:
  /// Begins marking a task group on the capturing @p stream.
  explicit basic_task_group_scope(basic_stream_ref<B> stream) : stream_(stream) {
    B::group_begin(stream_.checked("keel::task_group_scope"));
  }
  basic_task_group_scope(const basic_task_group_scope&) = delete;
  basic_task_group_scope& operator=(const basic_task_group_scope&) = delete;
  /// Left while still active: cancels the group and, after a normal return, reports it (see the class).
  ~basic_task_group_scope() {
    if (!active_) return;
    cancel();
    detail::report_scope_left_unfinished("keel::task_group_scope",
                                         "the group was closed with what was marked, without a handle",
                                         std::uncaught_exceptions() > 0);
  }
  /** @brief Closes the group and returns its handle. @throws keel::error invalid_state when already ended or cancelled. */
  [[nodiscard]] basic_task_group<B> end() {
    if (!active_)
      throw_error(errc::invalid_state, "keel::task_group_scope::end", "the group already ended (end() or cancel())");
    auto group = basic_task_group<B>::adopt(B::group_end(stream_.native_handle()));
    active_ = false;
    return group;
  }
  /** @brief Closes the group without a handle (what was marked stays in the capture); nothing when not active. Throws: nothing. */
  void cancel() noexcept {
    if (active_) B::group_abort(stream_.native_handle());
    active_ = false;
  }
  /// Whether the group is still open (neither end() nor cancel() closed it).
  bool active() const noexcept { return active_; }
  /// The capturing stream the group is marked on.
  basic_stream_ref<B> stream() const noexcept { return stream_.get(); }

 private:
  detail::stream_anchor<B> stream_;
  bool active_ = true;
};

/**
 * @brief Updates one task group on an update stream: operator launches issued
 * to the stream between construction and end() replace the group's tasks,
 * taking effect when the stream reaches end() (executions that reach the
 * group later run the new tasks; those that reached it earlier, the old).
 *
 * Finishes as every keel scope does (see basic_capture_scope): end() checks
 * and commits the replacement; cancel() abandons it, leaving the group
 * unchanged (on a backend whose abandon_restores_group_v is true, as keel's
 * are); left without either, by an early return as by an exception, the
 * scope abandons the update (it never commits what it was not told to) and,
 * left by a normal return, reports "left without end() or cancel()" to
 * keel's error handler (left by an exception, nothing: the exception tells).
 *
 * Ownership: holds the group's update right (one thread, one stream at a
 * time); not copyable or movable. Exceptions: the constructor throws
 * capture_violation (capturing stream), update_violation (group already
 * being updated) or invalid_state (model destroyed); end() throws
 * update_violation when the tasks do not match the group in number and
 * kind, leaving the group unchanged and the scope finished; cancel() and
 * the destructor throw nothing. An update with no tasks changes nothing.
 */
template <KEEL_TASK_GROUP_BACKEND B>
class [[nodiscard]] basic_update_scope {
  static_assert(detail::task_group_layer::check<B>::value);  // names the missing call of the task-group layer

 public:
  /// Begins an update of @p group issued on @p update_stream (not capturing).
  basic_update_scope(basic_stream_ref<B> update_stream, basic_task_group_ref<B> group) : stream_(update_stream) {
    B::update_begin(stream_.checked("keel::update_scope"), detail::checked_handle(group, "keel::update_scope"));
  }
  basic_update_scope(const basic_update_scope&) = delete;
  basic_update_scope& operator=(const basic_update_scope&) = delete;
  /// Left while still active: abandons the update and, after a normal return, reports it (see the class).
  ~basic_update_scope() {
    if (!active_) return;
    cancel();
    detail::report_scope_left_unfinished("keel::update_scope", "the update was abandoned, the group is unchanged",
                                         std::uncaught_exceptions() > 0);
  }
  /**
   * @brief Checks the replacement and commits it in stream order; the scope
   * is finished whatever the outcome. @throws keel::error invalid_state
   * when already ended or cancelled, update_violation when refused.
   */
  void end() {
    if (!active_)
      throw_error(errc::invalid_state, "keel::update_scope::end", "the update already ended (end() or cancel())");
    active_ = false;
    B::update_end(stream_.native_handle());
  }
  /** @brief Abandons the update; the group is unchanged; nothing when not active. Throws: nothing. */
  void cancel() noexcept {
    if (active_) B::update_abort(stream_.native_handle());
    active_ = false;
  }
  /// Whether the update is still open (neither end() nor cancel() finished it).
  bool active() const noexcept { return active_; }
  /// The update stream the replacement is issued on.
  basic_stream_ref<B> stream() const noexcept { return stream_.get(); }

 private:
  detail::stream_anchor<B> stream_;
  bool active_ = true;
};

/**
 * @brief The vendor's concurrent-update protocol in one object: an external
 * event fences a task group so that an update issued on another stream while
 * the model runs takes effect in the same execution.
 *
 * During capture, fence(capturing) records "wait for the event, then reset
 * it" just before the group. Each execution then waits at the fence until
 * the update stream records the event: update(...) does that after issuing
 * the replacement, and release(...) does it without an update. The event is
 * recorded even when an update is refused, so a running execution never
 * deadlocks (it runs the unchanged group).
 *
 * One signal per execution: the execution that waits at the fence consumes
 * the signal by resetting the event. A second update (or release) recorded
 * before that reset would be merged into the first and lost, and the next
 * execution would then wait forever (its stream's queue would fill and
 * block the next enqueue). So each update() and release() after the first
 * first waits, on the calling thread, until the previous signal has been
 * recorded and consumed (the event reset by the execution it released):
 * replaying, then updating on the update stream with no wait between (the
 * order of runners that update after the replay) is correct, the update
 * waiting for the previous execution to pass its fence. Passing the fence
 * is not finishing the group, though: an update whose commit runs while
 * the previous execution is still between its fence and its group lands in
 * that execution, one early (the window is that execution's next task, so
 * it is rare, but nothing closes it here); basic_fenced_model orders each
 * apply after the previous execution on the device and has no such window,
 * so prefer it where every step's values must be exact. When the previous
 * signal is not consumed within the consume limit (no execution to consume the previous
 * signal was issued, or it is held up), the call is refused with timeout,
 * naming the update stream, and issues nothing. Cost per call: two queries
 * when the previous signal was consumed already (the usual case with a
 * synchronize per step), and one default event recorded after each signal.
 * basic_fenced_model does the same ordering on the device, without
 * blocking the calling thread.
 *
 * Ownership: owns its external event (or a pooled loan); keep it alive as
 * long as the model; movable (a moved-from one has no event: its calls
 * throw invalid_handle). Thread safety: one updater at a time (the group
 * rule). Exceptions: as the update scope, plus the refusal above; fence()
 * as the stream's wait.
 *
 * @code
 * keel::host::concurrent_update fenced{dev};
 * { keel::host::capture_scope cap{main};
 *   fenced.fence(main);
 *   keel::host::task_group_scope mark{main}; main.launch(add, k, x, 1.1f); group = mark.end();
 *   model = cap.end(); }
 * fenced.release(side);   model.execute(main);              // first run: alpha 1.1
 * model.execute(main);    fenced.update(side, group, [&](auto s) { s.launch(add, k, x, 5.5f); });
 * @endcode
 */
template <KEEL_TASK_GROUP_BACKEND B>
class basic_concurrent_update {
  static_assert(detail::task_group_layer::check<B>::value && detail::event_layer::check<B>::value);

 public:
  /// The backend's device type.
  using device_type = typename B::device_type;
  /// How long update() and release() wait for the previous signal to be consumed, unless told otherwise.
  static constexpr std::chrono::milliseconds default_consume_limit{10000};

  /** @brief Makes its own external event. @throws keel::error resource_limit. */
  explicit basic_concurrent_update(device_type& dev, std::chrono::milliseconds consume_limit = default_consume_limit)
      : owned_(dev, event_flags::external), event_(owned_.ref()), consume_limit_(consume_limit) {}
  /** @brief Uses a pooled external event; the loan is kept. */
  explicit basic_concurrent_update(basic_pooled_event<B> loan,
                                   std::chrono::milliseconds consume_limit = default_consume_limit)
      : loan_(std::move(loan)), event_(loan_.ref()), consume_limit_(consume_limit) {}
  /// Takes the other object's event (or loan); the other is left without one.
  basic_concurrent_update(basic_concurrent_update&& o) noexcept
      : owned_(std::move(o.owned_)),
        loan_(std::move(o.loan_)),
        event_(std::exchange(o.event_, {})),
        signalled_(std::move(o.signalled_)),
        consume_limit_(o.consume_limit_) {}
  /// Releases the event (or loan) this holds, then takes the other's; the other is left without one.
  basic_concurrent_update& operator=(basic_concurrent_update&& o) noexcept {
    if (this != &o) {
      owned_ = std::move(o.owned_);
      loan_ = std::move(o.loan_);
      event_ = std::exchange(o.event_, {});
      signalled_ = std::move(o.signalled_);
      consume_limit_ = o.consume_limit_;
    }
    return *this;
  }
  basic_concurrent_update(const basic_concurrent_update&) = delete;
  basic_concurrent_update& operator=(const basic_concurrent_update&) = delete;

  /** @brief In a capture, just before the group: wait for the event, then reset it. */
  void fence(basic_stream_ref<B> capturing) const {
    capturing.wait(event_);
    capturing.reset_event(event_);
  }

  /**
   * @brief Lets the next execution pass the fence with the group as it is.
   * @throws keel::error timeout (the previous signal was not consumed in
   * time, see the class; nothing is recorded), and as the event's record.
   */
  void release(basic_stream_ref<B> update_stream) const {
    static constexpr const char* api = "keel::concurrent_update::release";
    wait_for_previous_signal(update_stream, api);
    event_.record(update_stream);
    note_signal(update_stream, api);
  }

  /**
   * @brief Calls issue(update_stream) inside an update scope for @p group,
   * then records the event on the update stream (always, see above).
   * @throws keel::error timeout (the previous signal was not consumed in
   * time, see the class; nothing is issued), and as the update scope.
   */
  template <class F>
  void update(basic_stream_ref<B> update_stream, basic_task_group_ref<B> group, F&& issue) const {
    static constexpr const char* api = "keel::concurrent_update::update";
    wait_for_previous_signal(update_stream, api);
    auto signal = make_scope_exit([&]() noexcept {
      try {
        event_.record(update_stream);
        note_signal(update_stream, api);
      } catch (...) {
        report_current_exception(api);
      }
    });
    basic_update_scope<B> scope(update_stream, group);
    {
      // The exception tells the caller: abandoning is not a scope left by mistake.
      auto abandon_on_failure = make_scope_fail([&]() noexcept { scope.cancel(); });
      std::forward<F>(issue)(update_stream);
    }
    scope.end();
  }

  /// The external event the model waits on before the group runs (recorded after each update).
  basic_event_ref<B> event() const noexcept { return event_; }

 private:
  // A second signal merges into the first unless the first was recorded
  // and consumed (reset by its execution) before the second is recorded.
  void wait_for_previous_signal(basic_stream_ref<B> update_stream, const char* api) const {
    const auto e = detail::checked_handle(event_, api);
    const auto s = detail::checked_handle(update_stream, api);
    if (!signalled_) return;  // the first signal
    const auto consumed = [&] { return signalled_.query() && !B::query(e); };
    if (consumed()) return;
    const auto deadline = std::chrono::steady_clock::now() + consume_limit_;
    while (!consumed()) {
      if (std::chrono::steady_clock::now() >= deadline)
        ::keel::detail::throw_composed(
            errc::timeout, api,
            {"the fence's external event still holds its previous signal after ", consume_limit_.count(),
             " ms (no execution has passed the fence and reset it): a second signal on update stream #",
             B::id_of(s),
             " would be merged into the first and the next execution would wait forever; issue the "
             "execution that consumes it first, or synchronize its stream (nothing was issued)"});
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  // Marks where the signal is in the update stream's order.
  void note_signal(basic_stream_ref<B> update_stream, const char*) const {
    if (!signalled_) signalled_ = basic_event<B>(update_stream.device());
    signalled_.record(update_stream);
  }

  basic_event<B> owned_;
  basic_pooled_event<B> loan_;
  basic_event_ref<B> event_;
  mutable basic_event<B> signalled_;  // recorded after the last signal; empty before the first
  std::chrono::milliseconds consume_limit_;
};

KEEL_END_NAMESPACE  // namespace keel
