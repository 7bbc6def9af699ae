// SPDX-License-Identifier: Apache-2.0
// The checked layer's rules for models built from bound streams (CANN's
// aclmdlRIBuildBegin ... aclmdlRIBuildEnd): only a persistent stream is
// bound, to one model at a time, while the model is being built; work issued
// to a bound stream is recorded into the model (through the same session
// machinery as a capture, so every capture rule for the work itself holds);
// activation and switch tasks name a stream bound to the same model; a
// stream's part ends with its end task; the build ends with a head stream
// and at least one end task; after it, bound streams take no work until
// unbound. Included by checked/backend.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "keel/runtime/backend/built_model.hpp"
#include "keel/runtime/checked/backend.hpp"
#include "keel/runtime/checked/build_books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/**
 * @brief The built-model rules over native backend @p Native, beside
 * checked::backend<Native> (a backend with built models derives from both).
 *
 * What @p Native supplies: `persistent_stream(device&)` → stream_handle,
 * `is_persistent(s)`, `build_open(device&)` → model_handle (its record
 * embeds a build_books, which `build_books(m)` returns, null for a model
 * that was not built), `device_of(m)`, `build_bind(m, s, head)` (the stream's
 * work is recorded into the model from now on), `build_end_task(m, s)`,
 * `build_activate(s, target)`, `build_switch(s, left, condition, right, type,
 * target)`, `build_finish(m)` and `build_unbind(m, s)`; for labels (used
 * only if called) `build_label(s, key)` and `build_jump(s, index, keys)`. Each is called only
 * when the rules allow it, under the device books' lock.
 *
 * Ownership: the books live in the native records. Thread safety: every call
 * is thread-safe (the device books' lock). Exceptions: keel::error naming the
 * API and the rule; a refused call changes nothing.
 */
template <class Native>
struct built_models {
  /// @cond KEEL_BACKEND_OPERATIONS
  using N = Native;
  // Named apart from checked::backend's aliases: a backend derives from both.
  using device_t = typename N::device_type;
  using stream_t = typename N::stream_handle;
  using model_t = typename N::model_handle;
  using books_t = build_books<stream_t>;
  using capture_t = capture_books<stream_t>;

  static stream_t create_persistent_stream(device_t& d) { return N::persistent_stream(d); }

  static model_t build_begin(device_t& d) {
    auto& db = N::books(d);
    auto session = std::make_shared<capture_t>();
    if constexpr (detail::kernel_body_runs_at_issue<N>()) session->uses_home = std::make_shared<model_uses>();
    session->mode = capture_mode::relaxed;  // a build refuses no call elsewhere
    session->build = 1;
    session->thread = std::this_thread::get_id();
    std::lock_guard<books_mutex> lock(db.m);
    session->id = db.next_id.fetch_add(1, std::memory_order_relaxed);
    const model_t m = N::build_open(d);
    books_t& bb = *N::build_books(m);
    bb.session = std::move(session);
    bb.id = bb.session->id;
    return m;
  }

  static void bind_stream(model_t m, stream_t s, bound_stream role) {
    static constexpr const char* api = "keel::model_builder::bind";
    auto& db = N::books(N::device_of(m));
    auto& sb = N::books(s);
    std::lock_guard<books_mutex> lock(db.m);
    books_t& bb = building(m, api);
    if (&N::device_of(s) != &N::device_of(m))
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"stream #", N::id_of(s), " belongs to another device"});
    if (!N::is_persistent(s))
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"only a persistent stream can be bound to a model (stream #", N::id_of(s),
                                      " is not; make it with make_persistent_stream, CANN's ACL_STREAM_PERSISTENT)"});
    if (sb.session) {
      if (sb.session->build != 0)
        ::keel::detail::throw_composed(errc::invalid_state, api,
                                       {"stream #", N::id_of(s), " is bound to built model #", sb.session->id,
                                        ": a stream is bound to one model at a time (unbind it first)"});
      ::keel::detail::throw_composed(
          errc::capture_violation, api,
          {"a capturing stream cannot be bound: ", detail::describe_capture(*sb.session, N::id_of(s))});
    }
    std::lock_guard<decltype(sb.update_m)> update_lock(sb.update_m);
    if (sb.updating != typename N::group_handle{})
      ::keel::detail::throw_composed(errc::update_violation, api,
                                     {"stream #", N::id_of(s), " is updating a task group and cannot be bound"});
    capture_t& c = *bb.session;
    c.lanes.reserve(c.lanes.size() + 1);
    bb.streams.reserve(bb.streams.size() + 1);
    N::build_bind(m, s, role == bound_stream::head);
    c.lanes.push_back({s, N::id_of(s), 0, 0, false});
    bb.streams.push_back({s, N::id_of(s), role == bound_stream::head});
    sb.session = bb.session;
    sb.lane = c.lanes.size() - 1;
    sb.redirect.store(1, std::memory_order_release);
  }

  static void end_task(model_t m, stream_t s) {
    static constexpr const char* api = "keel::model_builder::end_task";
    auto& db = N::books(N::device_of(m));
    std::lock_guard<books_mutex> lock(db.m);
    books_t& bb = building(m, api);
    const std::size_t lane = lane_of(bb, s, api);
    detail::check_build_issue(*bb.session, lane, N::id_of(s), api);
    N::build_end_task(m, s);
    count(*bb.session, lane);
    bb.session->lanes[lane].ended = true;
  }

  static void activate_stream(stream_t s, stream_t target) {
    static constexpr const char* api = "keel::model_builder::activate";
    auto& db = N::books(N::device_of(s));
    std::lock_guard<books_mutex> lock(db.m);
    const std::size_t lane = control_task(s, target, api);
    N::build_activate(s, target);
    count(*N::books(s).session, lane);
  }

  static void switch_stream(stream_t s, const void* left, compare_condition condition, const void* right,
                            compare_type type, stream_t target) {
    static constexpr const char* api = "keel::model_builder::switch_to";
    if (left == nullptr || right == nullptr)
      throw_error(errc::null_parameter, api, "a switch task compares two device values: left and right must not be null");
    const auto c = static_cast<std::int32_t>(condition);
    if (c < 0 || c > static_cast<std::int32_t>(compare_condition::less_or_equal))
      ::keel::detail::throw_composed(errc::invalid_parameter, api, {"unknown compare condition ", c});
    const auto t = static_cast<std::int32_t>(type);
    if (t != static_cast<std::int32_t>(compare_type::int32) && t != static_cast<std::int32_t>(compare_type::int64))
      ::keel::detail::throw_composed(errc::invalid_parameter, api, {"unknown compare type ", t, " (int32 or int64)"});
    auto& db = N::books(N::device_of(s));
    std::lock_guard<books_mutex> lock(db.m);
    const std::size_t lane = control_task(s, target, api);
    N::build_switch(s, left, condition, right, type, target);
    count(*N::books(s).session, lane);
  }

  // A label set on bound stream s (`key` names it, one per label: the
  // native backend places jumps at the build's end), and a switch on s to
  // one of `labels` by the uint32 label index at `index`; labels may be on
  // any stream bound to the same model, s's own included. Only a native
  // backend with labels has them (member templates: an explicit
  // instantiation for one without labels does not instantiate them).
  template <class M = N>
  static auto set_label(stream_t s, std::uintptr_t key) -> decltype(M::build_label(s, key), void()) {
    static constexpr const char* api = "keel::model_builder::set_label";
    auto& db = N::books(N::device_of(s));
    std::lock_guard<books_mutex> lock(db.m);
    const std::size_t lane = label_task(s, api);
    M::build_label(s, key);
    count(*N::books(s).session, lane);
  }
  template <class M = N>
  static auto switch_label(stream_t s, const void* index, std::vector<std::uintptr_t> labels)
      -> decltype(M::build_jump(s, index, std::move(labels)), void()) {
    static constexpr const char* api = "keel::model_builder::switch_label";
    if (index == nullptr) throw_error(errc::null_parameter, api, "the label index (a uint32 in device memory) must not be null");
    if (labels.empty()) throw_error(errc::invalid_parameter, api, "a switch by label index needs at least one label");
    auto& db = N::books(N::device_of(s));
    std::lock_guard<books_mutex> lock(db.m);
    const std::size_t lane = label_task(s, api);
    M::build_jump(s, index, std::move(labels));
    count(*N::books(s).session, lane);
  }

  static void build_end(model_t m) {
    static constexpr const char* api = "keel::model_builder::end";
    auto& db = N::books(N::device_of(m));
    std::lock_guard<books_mutex> lock(db.m);
    books_t& bb = building(m, api);
    capture_t& c = *bb.session;
    if (!c.active)
      ::keel::detail::throw_composed(errc::invalid_state, api,
                                     {"a stream bound to built model #", bb.id, " was destroyed during the build"});
    if (std::none_of(bb.streams.begin(), bb.streams.end(), [](const auto& b) { return b.head; }))
      ::keel::detail::throw_composed(
          errc::invalid_state, api,
          {"built model #", bb.id,
           " has no head stream: bind one with bound_stream::head (CANN's ACL_MODEL_STREAM_FLAG_HEAD)"});
    if (std::none_of(c.lanes.begin(), c.lanes.end(), [](const auto& l) { return l.ended; }))
      ::keel::detail::throw_composed(
          errc::invalid_state, api,
          {"built model #", bb.id, " has no end task: mark where a bound stream's work ends"});
    if (c.group_open)
      ::keel::detail::throw_composed(errc::capture_violation, api,
                                     {"a task group is still open on stream #", c.lanes[c.open_group_lane].stream_id});
    if constexpr (detail::kernel_body_runs_at_issue<N>()) c.uses_home->set_captured(c.uses);
    N::build_finish(m);
    model_books& mb = N::books(m);
    mb.tasks = c.tasks;
    mb.groups = c.groups;
    mb.alive = c.model_alive;
    mb.alive->store(true, std::memory_order_release);
    if constexpr (detail::kernel_body_runs_at_issue<N>()) {
      mb.uses = c.uses_home;
      c.uses.clear();
    }
    c.build = 2;
  }

  static void unbind_stream(model_t m, stream_t s) {
    static constexpr const char* api = "keel::model_builder::unbind";
    auto& db = N::books(N::device_of(m));
    std::lock_guard<books_mutex> lock(db.m);
    books_t* bb = N::build_books(m);
    if (bb == nullptr || !bb->session)
      throw_error(errc::invalid_parameter, api, "the model was not built from bound streams");
    const std::size_t lane = lane_of(*bb, s, api);
    if (bb->session->build != 2)
      ::keel::detail::throw_composed(errc::invalid_state, api,
                                     {"built model #", bb->id, " is still being built: unbind after its build ends"});
    N::build_unbind(m, s);
    leave(*bb, lane);
  }

  // The model goes: every stream still bound to it is unbound (a stream
  // destroyed meanwhile left already); a half-built model's streams just
  // leave it, and the runtime's destruction of the model releases them.
  // Called by checked::backend::destroy_model.
  static void forget_build(model_t m) noexcept {
    books_t* bb = N::build_books(m);
    if (bb == nullptr || !bb->session) return;
    auto& db = N::books(N::device_of(m));
    std::lock_guard<books_mutex> lock(db.m);
    const bool built = bb->session->build == 2;
    for (std::size_t i = 0; i < bb->session->lanes.size(); ++i) {
      const stream_t s = bb->session->lanes[i].stream;
      if (s == stream_t{}) continue;
      if (built) {
        try {
          N::build_unbind(m, s);
        } catch (...) {
          report_current_exception("keel::model::~model");
        }
      }
      leave(*bb, i);
    }
  }
  /// @endcond

 private:
  // The books of m, which must be a model being built. Caller holds the device books' lock.
  static books_t& building(model_t m, const char* api) {
    books_t* bb = N::build_books(m);
    if (bb == nullptr || !bb->session)
      throw_error(errc::invalid_parameter, api, "the model was not begun with build_begin (a captured model is built by capture)");
    if (bb->session->build != 1)
      ::keel::detail::throw_composed(errc::invalid_state, api, {"the build of built model #", bb->id, " ended"});
    return *bb;
  }

  static std::size_t lane_of(const books_t& bb, stream_t s, const char* api) {
    const auto& lanes = bb.session->lanes;
    for (std::size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i].stream == s && s != stream_t{}) return i;
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"stream #", N::id_of(s), " is not bound to built model #", bb.id});
  }

  // An activation or switch task on s naming target: both bound to the one
  // model being built, s's part not ended, target another stream. Returns s's lane.
  static std::size_t control_task(stream_t s, stream_t target, const char* api) {
    auto& sb = N::books(s);
    if (!sb.session || sb.session->build == 0)
      ::keel::detail::throw_composed(errc::invalid_state, api,
                                     {"activation and switch tasks belong to built models: stream #", N::id_of(s),
                                      " is not bound to a model being built"});
    capture_t& c = *sb.session;
    detail::check_build_issue(c, sb.lane, N::id_of(s), api);
    auto& tb = N::books(target);
    if (tb.session != sb.session)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"stream #", N::id_of(target), " is not bound to built model #", c.id,
                                      ": a task activates only a stream bound to its own model"});
    if (target == s)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"stream #", N::id_of(s), " cannot activate or switch to itself"});
    return sb.lane;
  }

  // A label or switch-label task on s: s bound to a model being built, its
  // part not ended. Returns s's lane.
  static std::size_t label_task(stream_t s, const char* api) {
    auto& sb = N::books(s);
    if (!sb.session || sb.session->build == 0)
      ::keel::detail::throw_composed(errc::invalid_state, api,
                                     {"label tasks belong to built models: stream #", N::id_of(s),
                                      " is not bound to a model being built"});
    detail::check_build_issue(*sb.session, sb.lane, N::id_of(s), api);
    return sb.lane;
  }

  static void count(capture_t& c, std::size_t lane) noexcept {
    ++c.tasks;
    ++c.lanes[lane].count;
  }

  // The stream of lane i leaves the model. Caller holds the device books' lock.
  static void leave(books_t& bb, std::size_t i) noexcept {
    const stream_t s = bb.session->lanes[i].stream;
    auto& sb = N::books(s);
    std::shared_ptr<capture_t> leaving;  // dropped after the update lock
    {
      std::lock_guard<decltype(sb.update_m)> lock(sb.update_m);
      leaving = std::move(sb.session);
      sb.redirect.store(0, std::memory_order_release);
    }
    N::capture_leave(s);
    bb.session->lanes[i].stream = stream_t{};
  }
};

} KEEL_END_NAMESPACE  // namespace keel::checked
