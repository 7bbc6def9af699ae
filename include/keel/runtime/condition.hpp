// SPDX-License-Identifier: Apache-2.0
// Conditional tasks: basic_condition (an 8-byte device value the model being
// captured owns, CANN's aclmdlRICondHandle), add_conditional and its
// spellings if_ / if_else / while_ / switch_ (aclmdlRIAddCondTask: a task of
// the capture that runs body models by the value, read when it runs), and
// basic_body_capture_scope, which captures a body
// (aclmdlRICaptureToModelRIBegin ... aclmdlRICaptureEnd).
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/runtime/backend/conditional.hpp"
#include "keel/runtime/backend/native.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief A condition of a model being captured: an 8-byte value work writes
 * (a kernel, a copy, a host callable) and conditional tasks read when they
 * run.
 *
 * Ownership: none; the model the capture makes owns the condition, which
 * lives as long as the model. Thread safety: a value; the device value is
 * read and written in stream order like any device memory. Exceptions: none.
 */
template <class B>
class basic_condition {
  using native_of = detail::native_of<B, typename B::condition_handle>;

 public:
  /// The vendor's condition handle (aclmdlRICondHandle on ACL; the backend's own handle where it has no vendor).
  using native_handle_type = typename native_of::type;
  /// An empty condition.
  constexpr basic_condition() noexcept = default;
  /// The device value (CANN's aclmdlRICondHandleGetCondPtr); null for an empty condition.
  std::uint64_t* value() const noexcept {
    return handle_ != typename B::condition_handle{} ? B::condition_value(handle_) : nullptr;
  }
  /// The vendor's native handle (aclmdlRICondHandle on ACL), null when empty.
  native_handle_type native_handle() const noexcept { return native_of::to(handle_); }
  /// Whether this names a condition.
  constexpr explicit operator bool() const noexcept { return handle_ != typename B::condition_handle{}; }
  /// Whether both name the same condition (or both are empty).
  friend constexpr bool operator==(const basic_condition& a, const basic_condition& b) noexcept {
    return a.handle_ == b.handle_;
  }
  /// Whether they name different conditions.
  friend constexpr bool operator!=(const basic_condition& a, const basic_condition& b) noexcept { return !(a == b); }

 private:
  friend struct detail::handle_access;
  template <class B2>
  friend basic_condition<B2> make_condition(basic_stream_ref<B2>, std::uint32_t, bool);
  constexpr explicit basic_condition(typename B::condition_handle h) noexcept : handle_(h) {}
  typename B::condition_handle handle_{};  // the backend's handle (its record of the condition); null when empty
};

/**
 * @brief Makes a condition of the model @p capturing's capture makes (CANN's
 * aclmdlRICondHandleCreate). With @p assign_default its value is set to
 * @p default_value at the start of each execution of that model (CANN's
 * ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT); without, it starts at
 * @p default_value once and is the program's to manage.
 * @throws keel::error capture_violation when @p capturing is not capturing.
 */
template <class B>
basic_condition<B> make_condition(basic_stream_ref<B> capturing, std::uint32_t default_value,
                                  bool assign_default = true) {
  static_assert(detail::conditional_layer::check<B>::value);  // names the missing call of the layer
  return basic_condition<B>(
      B::make_condition(detail::checked_handle(capturing, "keel::make_condition"), default_value, assign_default));
}

/**
 * @brief The most branches a conditional task takes: each is a body model
 * made when the task is issued, so a count no real SWITCH table has is
 * refused before anything is allocated.
 */
inline constexpr std::size_t max_conditional_branches = 65536;

/**
 * @brief Issues a conditional task on capturing stream @p s (CANN's
 * aclmdlRIAddCondTask) and returns its @p branches body models, empty, to be
 * captured with basic_body_capture_scope. The bodies belong to the model
 * the capture makes and live as long as it. A body may be executed directly
 * through its view while that model lives (its work runs once, the
 * condition unread); it is never adopted (model::from_native_handle
 * refuses it: invalid_handle) nor destroyed alone. IF takes 1 or 2 branches (then,
 * else), WHILE 1, SWITCH at least 1 (a value past the last runs none).
 * @throws keel::error capture_violation (not capturing), invalid_parameter
 * (a condition of another model, a branch count the kind does not take or
 * past max_conditional_branches).
 */
template <class B>
std::vector<basic_model_ref<B>> add_conditional(basic_stream_ref<B> s, basic_condition<B> c, conditional_kind kind,
                                                std::size_t branches) {
  static_assert(detail::conditional_layer::check<B>::value);
  static constexpr const char* api = "keel::add_conditional";
  if (!c) throw_error(errc::invalid_handle, api, "empty condition");
  if (branches > max_conditional_branches)
    detail::throw_composed(errc::invalid_parameter, api,
                           {"a conditional task has at most ", max_conditional_branches,
                            " branches (each is a body model made now), not ", branches});
  std::vector<typename B::model_handle> natives(branches);
  B::add_conditional(detail::checked_handle(s, api), detail::handle_of(c), kind, branches, natives.data());
  std::vector<basic_model_ref<B>> bodies;
  bodies.reserve(branches);
  for (auto n : natives) bodies.push_back(basic_model_ref<B>(detail::from_handle, n));
  return bodies;
}

/** @brief An IF task with one body: it runs when the condition is not 0. */
template <class B>
basic_model_ref<B> if_(basic_stream_ref<B> s, basic_condition<B> c) {
  return add_conditional(s, c, conditional_kind::if_, 1)[0];
}
/** @brief An IF task with a then body (condition not 0) and an else body (0). */
template <class B>
std::pair<basic_model_ref<B>, basic_model_ref<B>> if_else(basic_stream_ref<B> s, basic_condition<B> c) {
  auto bodies = add_conditional(s, c, conditional_kind::if_, 2);
  return {bodies[0], bodies[1]};
}
/** @brief A WHILE task: its body runs while the condition is not 0 (checked before each run). */
template <class B>
basic_model_ref<B> while_(basic_stream_ref<B> s, basic_condition<B> c) {
  return add_conditional(s, c, conditional_kind::while_, 1)[0];
}
/** @brief A SWITCH task of @p branches bodies: body `value` runs, none for a value past the last. */
template <class B>
std::vector<basic_model_ref<B>> switch_(basic_stream_ref<B> s, basic_condition<B> c, std::size_t branches) {
  return add_conditional(s, c, conditional_kind::switch_, branches);
}

/**
 * @brief Captures the work issued to a stream into a conditional body
 * (CANN's aclmdlRICaptureToModelRIBegin ... aclmdlRICaptureEnd), from
 * construction to end(). Every capture rule holds as for basic_capture_scope;
 * a body is captured once, while its parent's capture is in progress.
 *
 * Allocations follow the parent's pool: when the parent capture (or the
 * body it is nested in) was given a memory pool (basic_capture_scope's pool
 * constructor), allocations from that pool on this capture's streams, and
 * ops::run_on's workspaces there, belong to the parent's model like its own.
 * Given a pool of its own, the body takes run_on's workspaces from it, and
 * what it allocates from it belongs to the model at the root of its
 * captures as well (handed to it when that capture ends; a cancelled body
 * capture's too, a runtime keeping what a body recorded).
 *
 * Ownership: holds the capture, not the body (its parent model owns it);
 * neither copyable nor movable; left without end(), the capture is discarded
 * (the body is taken: on the host it stays empty, on ACL it may keep what was
 * recorded, CANN having no way to drop a body's capture). Thread safety: one scope per stream.
 * Exceptions: the constructor throws invalid_parameter (not a body),
 * invalid_state (captured already, parent capture ended), capture_violation
 * (the stream is capturing); end() throws as basic_capture_scope::end.
 */
template <KEEL_CAPTURE_BACKEND B>
class [[nodiscard]] basic_body_capture_scope {
  static_assert(detail::conditional_layer::check<B>::value);

 public:
  /// Begins capturing @p stream's work into @p body.
  basic_body_capture_scope(basic_stream_ref<B> stream, basic_model_ref<B> body,
                           capture_mode mode = capture_mode::global)
      : stream_(stream), body_(body) {
    B::capture_into_begin(stream_.checked("keel::body_capture_scope"), detail::checked_handle(body, "keel::body_capture_scope"), mode);
    route(nullptr);
  }
  /**
   * @brief Begins capturing @p stream's work into @p body, with allocations
   * from @p pool (a basic_memory_pool or its view) for the body's model (see
   * the class). @throws keel::error as the other constructor; nothing is
   * taken from the pool then.
   */
  template <class Pool, class = decltype(std::declval<const Pool&>().capture_source())>
  basic_body_capture_scope(basic_stream_ref<B> stream, basic_model_ref<B> body, const Pool& pool,
                           capture_mode mode = capture_mode::global)
      : stream_(stream), body_(body) {
    auto own = pool.capture_source();
    B::capture_into_begin(stream_.checked("keel::body_capture_scope"),
                          detail::checked_handle(body, "keel::body_capture_scope"), mode);
    route(std::move(own));
  }
  basic_body_capture_scope(const basic_body_capture_scope&) = delete;
  basic_body_capture_scope& operator=(const basic_body_capture_scope&) = delete;
  /// Left without end() or cancel(): cancels and, left by a normal return, reports that to the error handler, as every keel scope does.
  ~basic_body_capture_scope() {
    if (!active_) return;
    cancel();
    detail::report_scope_left_unfinished("keel::body_capture_scope", "the body capture was cancelled",
                                         std::uncaught_exceptions() > 0);
  }

  /** @brief Ends the capture; the body holds the work. @throws keel::error invalid_state (ended already). */
  void end() {
    if (!active_) throw_error(errc::invalid_state, "keel::body_capture_scope::end", "the capture already ended");
    // The own pool's memory goes to the root capture first: should the end
    // fail, it stays held (never given back while the body may use it).
    if (own_memory_) routes::adopt(device_key(), capture_id_, own_memory_);
    B::capture_into_end(stream_.native_handle());
    active_ = false;
    leave_pools();
  }
  /** @brief Ends the capture; the body is not captured again (host: it stays empty). Throws: nothing. */
  void cancel() noexcept {
    if (active_ && own_memory_) {
      try {
        routes::adopt(device_key(), capture_id_, own_memory_);
      } catch (...) {  // no room: given back with the scope, as a cancelled capture's
      }
    }
    if (active_) B::capture_into_discard(stream_.native_handle(), detail::handle_of(body_));
    active_ = false;
    leave_pools();
  }
  /// Whether the capture is still in progress.
  bool active() const noexcept { return active_; }
  /// The stream being captured.
  basic_stream_ref<B> stream() const noexcept { return stream_.get(); }

 private:
  using routes = detail::capture_memory_routes<B>;
  const void* device_key() const noexcept { return &B::device_of(stream_.native_handle()); }
  // Links this capture to its parent's (its memory goes to the root
  // capture's model); the parent's pool, if any, takes its allocations too,
  // and run_on's workspaces come from @p own when given, else from that pool.
  // Strong: a failure discards the capture begun.
  void route(typename routes::source_ptr own) {
    try {
      const void* dev = device_key();
      const std::uint64_t parent = B::body_parent_capture(detail::handle_of(body_));
      capture_id_ = stream_capture_status<B>(stream_.native_handle()).capture_id;
      routes::link_body(dev, capture_id_, parent);
      linked_ = true;
      if (typename routes::source_ptr theirs = routes::find(dev, parent)) {
        if (theirs->join_capture(capture_id_, parent)) joined_ = std::move(theirs);
      }
      if (own) {
        own_memory_ = own->begin_capture(capture_id_);
        own_ = std::move(own);
      }
      if (own_ || joined_) {
        routes::add(dev, capture_id_, own_ ? own_ : joined_);
        routed_ = true;
      }
    } catch (...) {
      B::capture_into_discard(stream_.native_handle(), detail::handle_of(body_));
      active_ = false;
      leave_pools();
      throw;
    }
  }
  void leave_pools() noexcept {
    const void* dev = device_key();
    if (routed_) routes::remove(dev, capture_id_);
    if (joined_) joined_->end_capture(capture_id_);
    if (own_) own_->end_capture(capture_id_);
    if (linked_) routes::unlink_body(dev, capture_id_);
    routed_ = linked_ = false;
    joined_.reset();
    own_.reset();
    own_memory_.reset();
  }
  detail::stream_anchor<B> stream_;
  basic_model_ref<B> body_;
  bool active_ = true;
  bool linked_ = false, routed_ = false;
  std::uint64_t capture_id_ = 0;
  typename routes::source_ptr joined_, own_;  // the parent's pool, and its own
  std::shared_ptr<detail::model_attachment<B>> own_memory_;
};

/** @brief The conditional layer's handles (see KEEL_RUNTIME_STREAM_ALIASES). */
#define KEEL_RUNTIME_CONDITIONAL_ALIASES(Backend)                       \
  using model_condition = ::keel::basic_condition<Backend>;             \
  using body_capture_scope = ::keel::basic_body_capture_scope<Backend>;

KEEL_END_NAMESPACE  // namespace keel
