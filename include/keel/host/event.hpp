// SPDX-License-Identifier: Apache-2.0
// The host backend's native event calls: a record completes its own mark in
// stream order; a wait waits for the mark that was the event's last when the
// wait was issued; an external event is a signal that waits block on.
#pragma once

#include <chrono>
#include <string>

#include "keel/core/error.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct event_calls : native_types {
  static event_handle create_event(device_type& d, event_flags flags) {
    device_state& dev = d.state();
    if (flags == event_flags::external) {
      std::size_t n = dev.live_external_.load(std::memory_order_relaxed);
      do {
        if (n >= dev.max_external_events())
          ::keel::detail::throw_composed(
              errc::resource_limit, "keel::event::create",
              {"the device allows ", dev.max_external_events(),
               " external events and all are in use; reuse them through an external_event_pool"});
      } while (!dev.live_external_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
    }
    return new event_state(dev, flags);
  }

  static void destroy_event(event_handle e) noexcept { ref_ptr<event_state>::drop(e); }
  static event_flags flags_of(event_handle e) noexcept { return e->flags; }
  static device_type& device_of(event_handle e) noexcept { return e->dev->facade(); }

  // On an idle stream (stream_state::idle) the record completes, or the
  // signal is given, at once on the caller's thread: a waiter on another
  // stream goes on without a hop through this stream's worker (the graph
  // runner's fenced update signals from an idle update stream every step).
  static void record(event_handle e, stream_handle s) {
    if (e->flags == event_flags::external) {
      if (s->idle()) return e->signal();
      s->submit<true>([ev = ref_ptr<event_state>(e)] { ev->signal(); });
    } else {
      ref_ptr<record_mark> mark = e->begin_record();
      if (s->idle()) return e->complete(*mark);
      s->submit<true>([ev = ref_ptr<event_state>(e), mark] { ev->complete(*mark); });
    }
  }

  static void wait(stream_handle s, event_handle e) {
    ref_ptr<event_state> ev(e);
    if (e->flags == event_flags::external) {
      s->submit<true>([ev] { ev->block_until_signalled(); });
      return;
    }
    // The wait is for the event's last record now; a later record (on any
    // stream, completing first or not) is not what this wait waits for.
    ref_ptr<record_mark> mark = e->last_record();
    if (!mark) return;  // never recorded: nothing to wait for (device semantics)
    if (mark->done.load(std::memory_order_acquire)) return;  // already complete: nothing to enqueue
    s->submit<true>([ev, mark] { ev->block_until(*mark); });
  }

  /** Clears an external event's signal, in stream order. */
  static auto reset_task(event_handle e) {
    return [ev = ref_ptr<event_state>(e)] { ev->signalled.store(false, std::memory_order_seq_cst); };
  }
  static void reset(stream_handle s, event_handle e) {
    if (s->idle()) return e->signalled.store(false, std::memory_order_seq_cst);  // as record()
    s->submit<true>(reset_task(e));
  }

  static bool query(event_handle e) {
    if (e->flags == event_flags::external) return e->signalled.load(std::memory_order_acquire);
    const ref_ptr<record_mark> mark = e->last_record();
    return !mark || mark->done.load(std::memory_order_acquire);
  }

  static void synchronize(event_handle e) {
    if (e->flags == event_flags::external) {
      e->block_until_signalled();
    } else if (const ref_ptr<record_mark> mark = e->last_record()) {
      e->block_until(*mark);
    }
  }

  /** synchronize(), bounded: timeout when the last record (or the signal) has not come by then. */
  static void synchronize_for(event_handle e, std::chrono::microseconds timeout) {
    if (!e->wait_until(clock::now() + timeout))
      throw_timeout("keel::event::synchronize",
                    "event #" + std::to_string(e->id) +
                        (e->flags == event_flags::external ? " was not signalled" : " did not complete its last record"),
                    timeout);
  }

  /**
   * wait(), bounded: the wait task fails with errc::timeout if the record (or
   * signal) has not come within @p timeout of the task's turn; the stream then
   * enters its error state, as when a task throws.
   */
  static void wait_for(stream_handle s, event_handle e, std::chrono::microseconds timeout) {
    static constexpr const char* api = "keel::stream::wait";
    ref_ptr<event_state> ev(e);
    auto fail = [id = e->id, timeout] {
      throw_timeout(api, "the wait for event #" + std::to_string(id) + " did not end", timeout);
    };
    if (e->flags == event_flags::external) {
      s->submit<false>([ev, timeout, fail] {
        if (!ev->waiters.wait_until(ev->dev->spin_budget(), clock::now() + timeout,
                                    [&] { return ev->signalled.load(std::memory_order_seq_cst); }))
          fail();
      });
      return;
    }
    ref_ptr<record_mark> mark = e->last_record();
    if (!mark || mark->done.load(std::memory_order_acquire)) return;
    s->submit<false>([ev, mark, timeout, fail] {
      if (!ev->waiters.wait_until(ev->dev->spin_budget(), clock::now() + timeout,
                                  [&] { return mark->done.load(std::memory_order_seq_cst); }))
        fail();
    });
  }

  /** Milliseconds between two completed timing events (the checked layer checked the flags). */
  static float elapsed_ms(event_handle start, event_handle end) {
    static constexpr const char* api = "keel::event::elapsed_time";
    ref_ptr<record_mark> marks[2];
    for (int i = 0; i < 2; ++i) {
      event_handle e = i == 0 ? start : end;
      marks[i] = e->last_record();
      if (!marks[i] || !marks[i]->done.load(std::memory_order_acquire))
        ::keel::detail::throw_composed(errc::invalid_state, api, {"event #", e->id, " has not completed a record"});
    }
    const auto ns =
        marks[1]->stamp_ns.load(std::memory_order_relaxed) - marks[0]->stamp_ns.load(std::memory_order_relaxed);
    return static_cast<float>(static_cast<double>(ns) / 1e6);
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
