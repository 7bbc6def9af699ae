// SPDX-License-Identifier: Apache-2.0
// The host backend's native task-group calls: a group is a node of its
// model that runs the group's current task list; an update stages a new
// list and swaps it in when its stream reaches the update's end. The checked
// layer decides what may be marked and staged and whether an update matches.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/host/capture.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct task_group_calls : native_types {
  static void group_begin(stream_handle s) {
    capture_target& c = *s->target;
    ref_ptr<group_state> g(new group_state, {});
    c.groups.push_back(g);
    try {
      c.nodes.push_back(replay_task([g]() { g->run(); }, replay_task::category::group));
    } catch (...) {
      c.groups.pop_back();
      throw;
    }
    c.open_group = std::move(g);
    c.group_stream = s;
  }

  static group_handle group_end(stream_handle s) {
    capture_target& c = *s->target;
    auto list = std::make_shared<task_list>();
    ref_ptr<group_state> g = std::move(c.open_group);
    list->tasks = std::move(g->building);
    list->describers = std::move(g->building_describers);
    g->tasks = std::move(list);
    c.group_stream = nullptr;
    return g.release();
  }

  static void destroy_group(group_handle g) noexcept { ref_ptr<group_state>::drop(g); }

  // The claim holds no reference: see group_state for how a group whose
  // last reference goes during an update stays valid until the claim ends.
  static bool try_claim(group_handle g) noexcept { return g->try_claim(); }
  static void end_claim(group_handle g) noexcept { group_state::end_claim(g); }

  // A replacement task, built in place in the group's staging (the checked
  // layer holds the stream's update lock).
  template <class F>
  static void update_launch_kernel(stream_handle s, group_handle g, kernel_kind kind, F&& f) {
    g->staging_describers.reserve(g->staging.size() + 1);
    g->staging.emplace_back(capture_calls::kernel_body(s, std::forward<F>(f)), replay_task::category::kernel, kind);
    g->staging_describers.push_back(capture_calls::describer_of<std::decay_t<F>>());  // reserved: cannot throw
  }
  static void update_discard(stream_handle, group_handle g) noexcept {
    g->staging.clear();
    g->staging_describers.clear();
  }
  // The staged replacement tasks carry their kinds: the checked layer reads them here.
  static std::size_t staged_count(group_handle g) noexcept { return g->staging.size(); }
  static kernel_kind staged_kind(group_handle g, std::size_t i) noexcept { return g->staging[i].kind(); }

  // The checked layer accepted the staged tasks: they take effect when the
  // stream reaches this point. Ends the claim (also when it throws).
  static void update_commit(stream_handle s, group_handle g) {
    static constexpr const char* api = "keel::update_scope::end";
    std::vector<replay_task>& staged = g->staging;
    struct finish {  // on an enqueued swap or a failure: drop what was staged, end the claim
      group_state* g;
      ~finish() {
        if (g == nullptr) return;
        g->staging.clear();
        g->staging_describers.clear();
        group_state::end_claim(g);
      }
    } done{g};
    g->retired.clear();  // what the last update replaced; outside every lock
    g->retired_describers.clear();
    g->retired_arguments.clear();
    // An idle update stream (every task issued to it has finished) has
    // already reached the end of this update: the swap takes effect here,
    // with no enqueue. Work another thread issues concurrently is ordered
    // after it, as if issued after end() returned.
    if (s->idle()) {
      g->publish_and_end_claim();
      done.g = nullptr;  // ended (and g possibly deleted)
      return;
    }
    // If the last task issued to this stream is a swap of this group that
    // has not run yet, this update takes its place: nothing can be ordered
    // between two adjacent tasks of one stream, so running the later
    // replacement at the earlier swap's position is the same stream order,
    // and it costs no enqueue. (The superseded tasks go back to `staged`.)
    if (g->last_swap_stream == s && s->ring.tail() == g->last_swap_index + 1) {
      if (auto pending = g->last_swap.lock();
          pending && g->refill_unpublished(*pending, s, staged, g->staging_describers))
        return;
    }
    // The swap task keeps the group alive; the claim alone does not.
    if (!g->try_retain())
      ::keel::detail::throw_composed(errc::invalid_state, api,
                                     {"the model of task group #", g->books.id, " was destroyed"});
    ref_ptr<group_state> keep(g, {});
    auto list = g->take_spare(s);
    list->tasks.swap(staged);  // the staging vector takes the spare's capacity
    list->describers.swap(g->staging_describers);
    std::weak_ptr<task_list> pending = list;
    const std::uint64_t index =
        s->submit<true>([keep = std::move(keep), list = std::move(list)]() mutable { keep->replace(std::move(list)); });
    g->last_swap = std::move(pending);
    g->last_swap_stream = s;
    g->last_swap_index = index;
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
