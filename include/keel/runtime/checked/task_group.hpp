// SPDX-License-Identifier: Apache-2.0
// The checked layer's task-group and update rules: a group is marked during
// capture, one at a time per device; an update runs on a stream that is not
// capturing, one updater per group, takes only operator launches, and must
// match the group's count and kinds; an abandoned or refused update leaves
// the group unchanged. Included by checked/backend.hpp.
#pragma once

#include "keel/runtime/checked/backend.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/// @cond KEEL_BACKEND_OPERATIONS
template <class Native>
void backend<Native>::group_begin(stream_handle s) {
  static constexpr const char* api = "keel::task_group_scope";
  auto& sb = N::books(s);
  auto& db = N::books(N::device_of(s));
  std::lock_guard<books_mutex> lock(db.m);
  if (!sb.session)
    ::keel::detail::throw_composed(
        errc::capture_violation, api,
        {"a task group is marked during capture, and stream #", N::id_of(s), " is not capturing"});
  capture_t& c = *sb.session;
  if (db.group_stream != stream_handle{})
    ::keel::detail::throw_composed(errc::capture_violation, api,
                                   {"stream #", N::id_of(db.group_stream), " is already marking a task group; ",
                                    detail::describe_capture(c, N::id_of(s))});
  check_may_issue(db, s, api);
  c.group_kinds.clear();
  N::group_begin(s);
  count_task(c, sb.lane);  // the group is one task of the model
  c.group_open = true;
  c.open_group_lane = sb.lane;
  db.group_stream = s;
}

template <class Native>
typename backend<Native>::group_handle backend<Native>::group_end(stream_handle s) {
  static constexpr const char* api = "keel::task_group_scope::end";
  auto& sb = N::books(s);
  if (sb.destroyed.load(std::memory_order_acquire))
    ::keel::detail::throw_composed(errc::invalid_handle, api, {"the scope's stream #", N::id_of(s), " was destroyed"});
  auto& db = N::books(N::device_of(s));
  std::lock_guard<books_mutex> lock(db.m);
  if (!sb.session || db.group_stream != s)
    ::keel::detail::throw_composed(errc::invalid_state, api, {"stream #", N::id_of(s), " is not marking a task group"});
  capture_t& c = *sb.session;
  std::vector<kernel_kind> signature = c.group_kinds;  // copied first: the native end cannot be undone
  const group_handle g = N::group_end(s);
  group_books& gb = N::books(g);
  gb.id = db.next_id.fetch_add(1, std::memory_order_relaxed);
  gb.marked_on = N::id_of(s);
  gb.signature = std::move(signature);
  gb.model_alive = c.model_alive;
  gb.alive_flag = gb.model_alive.get();
  gb.uses = c.uses_home;
  ++c.groups;
  c.group_open = false;
  c.group_kinds.clear();
  db.group_stream = stream_handle{};
  return g;
}

template <class Native>
void backend<Native>::group_abort(stream_handle s) noexcept {
  if (N::books(s).destroyed.load(std::memory_order_acquire)) return;  // its capture went with the stream
  try {
    N::destroy_group(group_end(s));  // the runtime cannot cancel a group: it closes with what was marked
  } catch (...) {
    report_current_exception("keel::task_group_scope");
  }
}

// An update claims the group (the native backend's claim, one atomic
// operation on the host backend), and at its end the checked layer compares
// what was staged with the group before the native commit swaps it in. The
// stream's update lock is entered without an atomic operation by the thread
// that began the last update, where the lock allows (the host's biased lock).
template <class Native>
void backend<Native>::update_begin(stream_handle s, group_handle g) {
  static constexpr const char* api = "keel::update_scope";
  auto& sb = N::books(s);
  enum class refusal { capturing, updating, model_gone, claimed } why = refusal::claimed;
  std::uint64_t other = 0;
  {
    detail::update_section<decltype(sb.update_m)> stage_lock(sb.update_m);
    if (sb.session) {
      why = refusal::capturing;
    } else if (sb.updating != group_handle{}) {
      why = refusal::updating;
      other = N::books(sb.updating).id;
    } else if (!group_model_alive(g)) {
      why = refusal::model_gone;
    } else if (!N::try_claim(g)) {
      why = refusal::claimed;
    } else {
      sb.updating = g;  // its staged list is empty: whoever ended the last claim emptied it
      if constexpr (keeps_uses) ++N::books(g).update_sequence;  // the claim holder's
      detail::set_owner(sb.update_m);
      sb.redirect.store(2, std::memory_order_release);
      return;
    }
  }
  const std::uint64_t id = N::books(g).id;
  switch (why) {
    case refusal::capturing: {
      auto& db = N::books(N::device_of(s));
      std::lock_guard<books_mutex> lock(db.m);  // describing a capture reads its books
      ::keel::detail::throw_composed(errc::capture_violation, api,
                                     {"updates are issued on a stream that is not capturing; ",
                                      (sb.session ? detail::describe_capture(*sb.session, N::id_of(s))
                                                  : detail::describe_stream(N::id_of(s)) + " was capturing")});
    }
    case refusal::updating:
      ::keel::detail::throw_composed(errc::update_violation, api,
                                     {"stream #", N::id_of(s), " is already updating group #", other});
    case refusal::model_gone:
      ::keel::detail::throw_composed(errc::invalid_state, api,
                                     {"the model of task group #", id, " was destroyed (or never completed)"});
    case refusal::claimed:
      break;
  }
  ::keel::detail::throw_composed(
      errc::update_violation, api,
      {"task group #", id, " is already being updated: one thread on one stream updates a group at a time"});
}

template <class Native>
void backend<Native>::update_end(stream_handle s) {
  static constexpr const char* api = "keel::update_scope::end";
  auto& sb = N::books(s);
  group_handle g{};
  {
    detail::update_section<decltype(sb.update_m)> stage_lock(sb.update_m);
    g = std::exchange(sb.updating, group_handle{});
    if (g != group_handle{}) sb.redirect.store(0, std::memory_order_release);
  }
  if (g == group_handle{}) {
    if (sb.destroyed.load(std::memory_order_acquire))
      ::keel::detail::throw_composed(errc::invalid_handle, api,
                                     {"the scope's stream #", N::id_of(s), " was destroyed"});
    ::keel::detail::throw_composed(errc::invalid_state, api,
                                   {"stream #", N::id_of(s), " is not updating a task group"});
  }
  // Detached from the stream, the staged list is the claim holder's alone.
  group_books& gb = N::books(g);
  const std::size_t staged = staged_count(g);
  const std::size_t expected = gb.signature.size();
  bool refused = true;
  std::size_t refused_at = staged;
  const bool alive = group_model_alive(g);
  if (staged == 0) {
    // An update with no tasks leaves the group as it was.
    gb.staged_uses.clear();
    N::update_discard(s, g);
    N::end_claim(g);
    return;
  }
  // rule update_count: the emulation decides it too (tests/witness/ disables it here)
  if (alive && staged == expected) {
    refused = false;
    for (std::size_t i = 0; i < expected && !refused; ++i)
      if (!detail::same_kind(gb.signature[i], staged_kind(g, i))) {
        refused = true;
        refused_at = i;
      }
  }
  if (refused) {
    struct finish {  // the refusal leaves the group unchanged and ends the claim
      stream_handle s;
      group_handle g;
      ~finish() {
        N::books(g).staged.clear();
        N::books(g).staged_uses.clear();
        N::update_discard(s, g);
        N::end_claim(g);
      }
    } done{s, g};
    refuse_end(g, staged, refused_at);
  }
  gb.staged.clear();
  if constexpr (keeps_uses) {
    // Prepared before the commit, which ends the claim (the next updater's
    // are its own) and after which publishing them must not fail.
    const std::shared_ptr<model_uses> home = gb.uses.lock();
    std::vector<uses_change> changes;
    std::shared_ptr<model_uses::table> room;
    try {
      if (home) {
        changes = group_changes(gb.id, std::move(gb.staged_uses));
        room = home->room(changes.size());
      }
    } catch (...) {  // no memory to keep the update's uses: it is abandoned, the group unchanged
      gb.staged_uses.clear();
      N::update_discard(s, g);
      N::end_claim(g);
      throw;
    }
    gb.staged_uses.clear();
    const std::uint64_t sequence = gb.update_sequence;
    N::update_commit(s, g);  // swaps the staged tasks in, in stream order, and ends the claim
    if (home) commit_uses(*home, sequence, changes, std::move(room), s);
  } else {
    N::update_commit(s, g);  // swaps the staged tasks in, in stream order, and ends the claim
  }
}

// The group's tasks, position by position, keep what the update's launches use.
template <class Native>
std::vector<uses_change> backend<Native>::group_changes(std::uint64_t group, std::vector<std::shared_ptr<void>> uses) {
  std::vector<uses_change> changes;
  changes.reserve(uses.size());
  for (std::size_t i = 0; i < uses.size(); ++i)
    changes.push_back(uses_change{uses_key{uses_key::kind::group_task, group, i}, std::move(uses[i])});
  return changes;
}

// Publishes a committed update's uses; the table replaced stays until @p s
// (null: none) has run the update. The update took effect: should
// publishing fail (it allocates only when other updates outgrew the room
// made before the commit), that is reported, not thrown.
template <class Native>
void backend<Native>::commit_uses(model_uses& home, std::uint64_t sequence, std::vector<uses_change>& changes,
                                  std::shared_ptr<model_uses::table> room, stream_handle s) noexcept {
  if constexpr (keeps_uses) {
    try {
      std::shared_ptr<void> old = home.apply(sequence, changes, std::move(room));
      if (old && s != stream_handle{}) N::keep_with_work(s, std::move(old));
    } catch (...) {
      report_current_exception("keel::update_scope::end");
    }
  } else {
    (void)home;
    (void)sequence;
    (void)changes;
    (void)room;
    (void)s;
  }
}

// Why update_end refuses: model gone, count, or the kind of task @p at; out
// of line, so building the message costs the accepted path nothing.
template <class Native>
void backend<Native>::refuse_end(group_handle handle, std::size_t staged, std::size_t at) {
  static constexpr const char* api = "keel::update_scope::end";
  const group_books& g = N::books(handle);
  if (!(g.model_alive && g.model_alive->load(std::memory_order_acquire)))
    ::keel::detail::throw_composed(errc::invalid_state, api, {"the model of task group #", g.id, " was destroyed"});
  const std::size_t expected = g.signature.size();
  if (staged != expected)
    ::keel::detail::throw_composed(
        errc::update_violation, api,
        {"task group #", g.id, " has ", expected, " tasks and the update issued ", staged, "; the group is unchanged"});
  ::keel::detail::throw_composed(
      errc::update_violation, api,
      {"task ", at, " of group #", g.id, " is kernel '", g.signature[at].name(), "' and the update issued '",
       staged_kind(handle, at).name(), "'; the group is unchanged"});
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::checked
