// SPDX-License-Identifier: Apache-2.0
// The host backend's external operations (event_operation::external): a
// model's record of a default event that streams and other models outside it
// wait on, and a model's wait on such a record made outside it. Like a
// stream's record and wait, each execution takes its points when it is
// issued, in the executing stream's order: the record's mark is made then
// (a stream that waits on the event after the execution call waits for this
// execution's record, not an earlier one), and the wait's mark is the
// event's last record then. The execution carries them in a frame its tasks
// find through the worker's current frame.
#pragma once

#include <utility>
#include <vector>

#include "keel/host/detail/event_state.hpp"
#include "keel/host/detail/task.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
// One external record or wait of a model: the task and the execution's
// frame meet on its address.
struct external_slot : ref_counted {
  external_slot(ref_ptr<event_state> e, bool r) noexcept : event(std::move(e)), record(r) {}
  ref_ptr<event_state> event;
  bool record;  // a record (else a wait)
};

// One execution's points: a new mark per external record (installed as the
// event's last record once the execution is issued), the awaited mark (null:
// never recorded, nothing to wait for) per external wait.
struct external_frame {
  std::vector<std::pair<const external_slot*, ref_ptr<record_mark>>> marks;

  // What slot s does in this execution; false when the frame does not know it
  // (a nested model's or a conditional body's slot: it takes its point when it runs).
  bool find(const external_slot* s, ref_ptr<record_mark>& mark) const {
    for (const auto& m : marks) {
      if (m.first == s) {
        mark = m.second;
        return true;
      }
    }
    return false;
  }

  // The frame of an execution about to be issued: nothing is installed yet.
  static external_frame prepare(const std::vector<ref_ptr<external_slot>>& slots) {
    external_frame f;
    f.marks.reserve(slots.size());
    for (const auto& s : slots)
      f.marks.emplace_back(s.get(), s->record ? ref_ptr<record_mark>(new record_mark, {}) : s->event->last_record());
    return f;
  }
  // The execution is issued: its records become their events' last records.
  void install() const noexcept {
    for (const auto& m : marks) {
      if (!m.first->record) continue;
      ref_ptr<record_mark> previous;  // dropped after the lock
      std::lock_guard<keel::detail::test_and_set_lock> lock(m.first->event->last_lock);
      previous = std::exchange(m.first->event->last, m.second);
    }
  }

  // The frame of the execution running on this thread (null: none).
  static const external_frame*& current() noexcept {
    static thread_local const external_frame* frame = nullptr;
    return frame;
  }
  // Makes @p f current for a scope (an execution's run).
  struct scope {
    explicit scope(const external_frame* f) noexcept : previous(std::exchange(current(), f)) {}
    ~scope() { current() = previous; }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
    const external_frame* previous;
  };
};

// The replayed tasks of an external record and wait: the execution's point,
// or, outside a frame that knows the slot, the point at run time.
inline auto external_record_task(ref_ptr<external_slot> slot) {
  return [slot] {
    ref_ptr<record_mark> mark;
    const external_frame* f = external_frame::current();
    if (f == nullptr || !f->find(slot.get(), mark)) mark = slot->event->begin_record();
    slot->event->complete(*mark);
  };
}
inline auto external_wait_task(ref_ptr<external_slot> slot) {
  return [slot] {
    ref_ptr<record_mark> mark;
    const external_frame* f = external_frame::current();
    if (f == nullptr || !f->find(slot.get(), mark)) mark = slot->event->last_record();
    if (mark) slot->event->block_until(*mark);
  };
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
