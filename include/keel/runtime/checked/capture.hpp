// SPDX-License-Identifier: Apache-2.0
// The checked layer's capture rules: a capture begins on a stream that is
// neither capturing nor updating, ends on the stream that began it with no
// task group open and every forked stream joined back, and a discarded or
// abandoned capture leaves nothing behind. Included by checked/backend.hpp.
#pragma once

#include "keel/runtime/checked/backend.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/// @cond KEEL_BACKEND_OPERATIONS
template <class Native>
void backend<Native>::capture_begin(stream_handle s, capture_mode mode) {
  static constexpr const char* api = "keel::capture_scope";
  auto& sb = N::books(s);
  auto& db = N::books(N::device_of(s));
  std::lock_guard<books_mutex> lock(db.m);
  // rule capture_begun_twice: the emulation decides it too (tests/witness/ disables it here)
  if (sb.session)
    ::keel::detail::throw_composed(errc::capture_violation, api,
                                   {"capture cannot begin: ", detail::describe_capture(*sb.session, N::id_of(s))});
  const auto refuse_updating = [&] {
    ::keel::detail::throw_composed(errc::capture_violation, api,
                                   {"capture cannot begin: stream #", N::id_of(s), " is updating a task group"});
  };
  {
    std::lock_guard<decltype(sb.update_m)> stage_lock(sb.update_m);
    if (sb.updating != group_handle{}) refuse_updating();
  }
  auto c = std::make_shared<capture_t>();
  c->mode = mode;
  c->thread = std::this_thread::get_id();
  c->id = db.next_id.fetch_add(1, std::memory_order_relaxed);  // or the runtime's model id (below)
  c->origin = s;
  c->origin_id = N::id_of(s);
  c->lanes.push_back({s, c->origin_id, 0, 0});
  if constexpr (keeps_uses) c->uses_home = std::make_shared<model_uses>();
  db.captures.reserve(db.captures.size() + 1);
  N::capture_begin(s, mode);
  adopt_native_capture_id(*c, s);
  {
    // update_begin checks "not capturing" under the update lock alone: an
    // update that began since the check above is refused as if it were first.
    std::lock_guard<decltype(sb.update_m)> stage_lock(sb.update_m);
    if (sb.updating == group_handle{}) {
      sb.session = c;
      sb.lane = 0;
      sb.redirect.store(1, std::memory_order_release);
    }
  }
  if (sb.session != c) {
    N::capture_discard(s);
    refuse_updating();
  }
  db.captures.push_back(c.get());  // reserved above
  db.capture_count.fetch_add(1, std::memory_order_acq_rel);
  if (mode != capture_mode::relaxed) db.strict_captures.fetch_add(1, std::memory_order_acq_rel);
}

template <class Native>
typename backend<Native>::model_handle backend<Native>::capture_end(stream_handle s) {
  static constexpr const char* api = "keel::capture_scope::end";
  auto& sb = N::books(s);
  if (sb.destroyed.load(std::memory_order_acquire))
    ::keel::detail::throw_composed(errc::invalid_handle, api, {"the scope's stream #", N::id_of(s), " was destroyed"});
  auto& db = N::books(N::device_of(s));
  std::lock_guard<books_mutex> lock(db.m);
  if (!sb.session)
    ::keel::detail::throw_composed(errc::invalid_state, api, {"stream #", N::id_of(s), " is not capturing"});
  const std::shared_ptr<capture_t> keep = sb.session;
  capture_t& c = *keep;
  if (c.origin != s)
    ::keel::detail::throw_composed(errc::capture_violation, api,
                                   {"capture must end on the stream that began it (stream #", c.origin_id, "); ",
                                    detail::describe_capture(c, N::id_of(s))});
  // rule capture_invalidated: the emulation decides it too (tests/witness/ disables it here)
  if (!c.active)
    ::keel::detail::throw_composed(
        errc::capture_violation, api,
        {"the capture was invalidated (a joined stream was destroyed); ", detail::describe_capture(c, N::id_of(s))});
  // rule group_open_at_end: the emulation decides it too (tests/witness/ disables it here)
  if (c.group_open)
    ::keel::detail::throw_composed(errc::capture_violation, api,
                                   {"a task group is still open on stream #", c.lanes[c.open_group_lane].stream_id,
                                    "; ", detail::describe_capture(c, N::id_of(s))});
  for (std::size_t i = 1; i < c.lanes.size(); ++i)
    // rule unjoined_fork: the emulation decides it too (tests/witness/ disables it here)
    if (c.lanes[i].joined < c.lanes[i].count)
      ::keel::detail::throw_composed(
          errc::capture_violation, api,
          {"stream #", c.lanes[i].stream_id,
           " forked from the capture and has work the capturing stream never waited for: record an event "
           "on it and wait on that event here; ",
           detail::describe_capture(c, N::id_of(s))});
  if constexpr (keeps_uses) c.uses_home->set_captured(c.uses);  // before the end, which cannot be undone
  model_handle m{};
  try {
    m = N::capture_end(s);
  } catch (...) {
    // The runtime may have ended the capture while refusing it: then it is gone.
    if (!N::capture_active(s)) discard_locked(db, c);
    throw;
  }
  model_books& mb = N::books(m);
  mb.id = c.id;
  mb.tasks = c.tasks;
  mb.groups = c.groups;
  mb.alive = c.model_alive;
  mb.alive->store(true, std::memory_order_release);
  if constexpr (keeps_uses) {
    mb.uses = c.uses_home;
    c.uses.clear();
  }
  detach_locked(db, c);  // the lanes leave; the origin's native capture is over already
  return m;
}

template <class Native>
void backend<Native>::capture_discard(stream_handle s) noexcept {
  auto& sb = N::books(s);
  if (sb.destroyed.load(std::memory_order_acquire)) return;  // destroy_stream discarded it
  auto& db = N::books(N::device_of(s));
  std::lock_guard<books_mutex> lock(db.m);
  if (sb.session && sb.session->origin == s) discard_locked(db, *sb.session);
}

template <class Native>
void backend<Native>::destroy_model(model_handle m) noexcept {
  if constexpr (detail::has_build_books<N>()) built_models<N>::forget_build(m);  // its bound streams are unbound
  if (const auto& alive = N::books(m).alive) alive->store(false, std::memory_order_release);
  // The pool memory goes after the model (in the order of the stream that executed it last).
  const std::shared_ptr<void> memory = std::exchange(N::books(m).memory, nullptr);
  N::destroy_model(m);
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::checked
