// SPDX-License-Identifier: Apache-2.0
// The checked layer's rules for conditional tasks (CANN's
// aclmdlRICondHandleCreate, aclmdlRIAddCondTask, aclmdlRICaptureToModelRIBegin):
// a condition is made by a capturing stream and belongs to the model that
// capture makes; a conditional task is issued on a capturing stream, with a
// condition of its own capture and a branch count its kind allows (IF 1 or
// 2, WHILE 1, SWITCH at least 1), and yields body models owned by that
// model; a body is captured once, into itself, while its parent's capture
// is in progress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "keel/runtime/backend/conditional.hpp"
#include "keel/runtime/checked/backend.hpp"
#include "keel/runtime/checked/condition_books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/**
 * @brief The conditional-task rules over native backend @p Native, beside
 * checked::backend<Native> (a backend with conditional tasks derives from both).
 *
 * What @p Native supplies: `condition_handle`; `condition_create(s, default,
 * assign)` (the condition lives as long as the model s's capture makes;
 * with @p assign its value is set to the default at the start of each of
 * the model's executions), `condition_books_of(c)`, `condition_ptr(c)`
 * (the 8-byte value work writes); `captured_conditional(s, c, kind, n, out)`
 * (a task of s's capture that runs the bodies it makes, out[0..n)), whose
 * records `body_books_of(m)` returns (null for any other model);
 * `capture_into(s, body)` / `capture_into_clear(s)`, which make s's next
 * capture record into @p body (its native capture_begin / end / discard honour it).
 *
 * Ownership: the books live in the native records. Thread safety: every call
 * is thread-safe (the device books' lock). Exceptions: keel::error naming the
 * API and the rule; a refused call changes nothing.
 */
template <class Native>
struct conditionals {
  /// @cond KEEL_BACKEND_OPERATIONS
  using N = Native;
  // Named apart from checked::backend's aliases: a backend derives from both.
  using stream_t = typename N::stream_handle;
  using model_t = typename N::model_handle;
  using condition_t = typename N::condition_handle;
  using capture_t = capture_books<stream_t>;

  static condition_t make_condition(stream_t s, std::uint32_t default_value, bool assign_default) {
    static constexpr const char* api = "keel::make_condition";
    auto& sb = N::books(s);
    auto& db = N::books(N::device_of(s));
    std::lock_guard<books_mutex> lock(db.m);
    capture_t& c = capturing(s, api, "a condition is made by a capturing stream, for the model its capture makes");
    const condition_t h = N::condition_create(s, default_value, assign_default);
    N::condition_books_of(h).owner = c.id;
    (void)sb;
    return h;
  }

  static std::uint64_t* condition_value(condition_t h) noexcept { return N::condition_ptr(h); }

  static void add_conditional(stream_t s, condition_t h, conditional_kind kind, std::size_t branches, model_t* out) {
    static constexpr const char* api = "keel::add_conditional";
    const auto k = static_cast<std::int32_t>(kind);
    if (k < 0 || k > static_cast<std::int32_t>(conditional_kind::switch_))
      ::keel::detail::throw_composed(errc::invalid_parameter, api, {"unknown conditional kind ", k});
    if (kind == conditional_kind::if_ && (branches < 1 || branches > 2))
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"an IF task has 1 branch (then) or 2 (then, else), not ", branches});
    if (kind == conditional_kind::while_ && branches != 1)
      ::keel::detail::throw_composed(errc::invalid_parameter, api, {"a WHILE task has 1 body, not ", branches});
    if (kind == conditional_kind::switch_ && branches < 1)
      throw_error(errc::invalid_parameter, api, "a SWITCH task has at least 1 branch");
    auto& sb = N::books(s);
    auto& db = N::books(N::device_of(s));
    std::lock_guard<books_mutex> lock(db.m);
    capture_t& c = capturing(s, api, "a conditional task is issued on a capturing stream");
    if (N::condition_books_of(h).owner != c.id)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"the condition belongs to another model (made in capture #",
                                      N::condition_books_of(h).owner, "); ", detail::describe_capture(c, N::id_of(s))});
    if (db.group_stream != stream_t{})
      ::keel::detail::throw_composed(
          errc::capture_violation, api,
          {"stream #", N::id_of(db.group_stream), " marks a task group: only operator launches may be issued; ",
           detail::describe_capture(c, N::id_of(s))});
    N::captured_conditional(s, h, kind, branches, out);
    for (std::size_t i = 0; i < branches; ++i) {
      body_books<stream_t>& bb = *N::body_books_of(out[i]);
      bb.parent = sb.session;
      bb.parent_id = c.id;
    }
    ++c.tasks;
    ++c.lanes[sb.lane].count;
  }

  static void capture_into_begin(stream_t s, model_t body, capture_mode mode) {
    static constexpr const char* api = "keel::body_capture_scope";
    auto& db = N::books(N::device_of(s));
    body_books<stream_t>* bb = nullptr;
    {
      std::lock_guard<books_mutex> lock(db.m);
      bb = N::body_books_of(body);
      if (bb == nullptr)
        throw_error(errc::invalid_parameter, api,
                    "only a conditional body (a model add_conditional made) is captured into; capture a model "
                    "with capture_scope");
      if (bb->taken)
        throw_error(errc::invalid_state, api, "the body was captured already (a body is captured once)");
      const std::shared_ptr<capture_t> parent = bb->parent.lock();
      if (!parent || parent->lanes.empty())
        ::keel::detail::throw_composed(errc::invalid_state, api,
                                       {"the body's parent capture #", bb->parent_id,
                                        " ended: a body is captured while its parent's capture is in progress"});
      bb->taken = true;
    }
    N::capture_into(s, body);
    try {
      backend<N>::capture_begin(s, mode);
    } catch (...) {
      N::capture_into_clear(s);
      std::lock_guard<books_mutex> lock(db.m);
      bb->taken = false;
      throw;
    }
  }
  // Whether @p m is a conditional body (its parent model owns it: never adopted).
  static bool is_body(model_t m) noexcept { return N::body_books_of(m) != nullptr; }
  /**
   * Ends the capture into a body: the capture rules of capture_end; the body
   * then holds the work, and its parent's capture what the work uses (the
   * parent model runs the body: checked/task_uses.hpp).
   */
  static void capture_into_end(stream_t s) {
    const model_t body = backend<N>::capture_end(s);
    if constexpr (backend<N>::keeps_uses) {
      const std::shared_ptr<model_uses>& uses = N::books(body).uses;
      std::shared_ptr<void> table = uses ? uses->snapshot() : nullptr;
      if (!table) return;
      auto& db = N::books(N::device_of(s));
      std::lock_guard<books_mutex> lock(db.m);
      body_books<stream_t>* bb = N::body_books_of(body);
      if (const std::shared_ptr<capture_t> parent = bb != nullptr ? bb->parent.lock() : nullptr)
        parent->uses.template emplace<std::shared_ptr<void>>(std::move(table));
    }
  }
  // A discarded capture into a body leaves it taken (a body is captured
  // once): the host's stays empty, a runtime's may keep what was recorded,
  // so its parent's capture keeps what that uses.
  static void capture_into_discard(stream_t s, model_t body) noexcept {
    if constexpr (backend<N>::keeps_uses) {
      auto& db = N::books(N::device_of(s));
      std::lock_guard<books_mutex> lock(db.m);
      auto& sb = N::books(s);
      body_books<stream_t>* bb = N::body_books_of(body);
      const std::shared_ptr<capture_t> parent = bb != nullptr ? bb->parent.lock() : nullptr;
      if (parent && sb.session && sb.session->origin == s) parent->uses.splice(sb.session->uses);
    }
    backend<N>::capture_discard(s);
  }

  /**
   * The capture id of the capture @p body belongs to (its parent's): what a
   * body capture scope routes its allocations by. @throws keel::error
   * invalid_parameter when @p body is not a conditional body.
   */
  static std::uint64_t body_parent_capture(model_t body) {
    auto& db = N::books(N::device_of(body));
    std::lock_guard<books_mutex> lock(db.m);
    const body_books<stream_t>* bb = N::body_books_of(body);
    if (bb == nullptr)
      throw_error(errc::invalid_parameter, "keel::body_capture_scope", "only a conditional body has a parent capture");
    return bb->parent_id;
  }
  /// @endcond

 private:
  // s's capture (not a build). Caller holds the device books' lock.
  static capture_t& capturing(stream_t s, const char* api, const char* rule) {
    auto& sb = N::books(s);
    if (!sb.session || sb.session->build != 0)
      ::keel::detail::throw_composed(errc::capture_violation, api,
                                     {rule, ", and stream #", N::id_of(s), " is not capturing"});
    return *sb.session;
  }
};

} KEEL_END_NAMESPACE  // namespace keel::checked
