// SPDX-License-Identifier: Apache-2.0
// The host backend's task group: the task lists a group node of a model runs,
// swapped by updates, and the one word that is both their lock and the
// update claim.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "keel/host/detail/spin.hpp"
#include "keel/host/detail/task.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
// A group's tasks as one execution sees them. `runners` counts executions
// running the list, so an update may refill a replaced list only once
// nobody runs it any more.
// Describes the arguments of a task a launch made (introspection).
using task_describer = void (*)(const replay_task& task, std::vector<kernel_argument>& out);
struct task_list {
  std::vector<replay_task> tasks;
  // Introspection: describers[i] describes tasks[i]'s arguments (null: a
  // kernel object keel records none of). Descriptions are made when
  // introspection first asks about the list while it is the group's, under
  // the group's lock (`described`), so updates pay nothing for them; they
  // go when the list is refilled.
  std::vector<task_describer> describers;
  std::vector<std::vector<kernel_argument>> arguments;
  bool described = false;
  std::atomic<int> runners{0};
  // Guarded by the group's lock. A list an update staged stays unpublished
  // until its swap runs; until then the stream that staged it (`claim`) may
  // refill it in place with a later update (see backend::update_end).
  bool published = true;
  const void* claim = nullptr;
};

// A marked group. One word (`state`) is both the lock of its task lists and
// the update claim, so an update claims the group with one atomic operation
// and, at its end, swaps the new tasks in and gives the claim back with
// another (the unlock is a plain store).
//
// The claim holds no reference: if the last reference goes while the group
// is claimed (the model and every handle destroyed during an update), the
// group is marked orphaned and the claim holder deletes it when the claim
// ends; so the updating stream's raw pointer stays valid.
struct group_state {
  group_state() = default;
  group_state(const group_state&) = delete;
  group_state& operator=(const group_state&) = delete;

  // ---- references (ref_ptr's interface) ----
  void retain() const noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  // True when the caller is to delete the group: the last reference went
  // and no update holds the claim (else the claim holder deletes it).
  bool release_ref() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return false;
    const std::uint32_t held = lock();
    if (held & claimed) {
      unlock(held | orphaned);
      return false;
    }
    unlock(held);
    return true;
  }
  // A reference from the claim holder, who has only a raw pointer: false if
  // the group is orphaned (its last reference already went).
  bool try_retain() noexcept {
    long n = refs.load(std::memory_order_relaxed);
    do {
      if (n == 0) return false;
    } while (!refs.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
    return true;
  }

  // ---- the state word: lock, claim, orphan ----
  static constexpr std::uint32_t locked = 1, claimed = 2, orphaned = 4;
  // Every change to `state` is made by a CAS that expects it unlocked, or by
  // the lock holder: so while held, the word cannot change, and unlock() is
  // a plain store of the value lock() returned (minus `locked`).
  std::uint32_t lock() noexcept {
    std::uint32_t cur = state.load(std::memory_order_relaxed) & ~locked;
    while (!state.compare_exchange_weak(cur, cur | locked, std::memory_order_acquire, std::memory_order_relaxed)) {
      if (cur & locked) {
        cpu_relax();
        cur &= ~locked;
      }
    }
    return cur | locked;
  }
  void unlock(std::uint32_t held) noexcept { state.store(held & ~locked, std::memory_order_release); }
  // One updater at a time: false if another update holds the claim.
  bool try_claim() noexcept {
    std::uint32_t cur = state.load(std::memory_order_relaxed) & ~locked;
    for (;;) {
      if (cur & claimed) return false;
      if (state.compare_exchange_weak(cur, cur | claimed, std::memory_order_acquire, std::memory_order_relaxed))
        return true;
      if (cur & locked) {
        cpu_relax();
        cur &= ~locked;
      }
    }
  }
  // Ends the claim taken by try_claim; deletes @p g if it was orphaned meanwhile.
  static void end_claim(group_state* g) noexcept {
    const std::uint32_t held = g->lock();
    g->unlock(held & ~claimed);
    if (held & orphaned) delete g;
  }

  // What the updating thread reads each update.
  alignas(64) mutable std::atomic<long> refs{1};
  checked::group_books books;  // the checked layer's: id, signature, what an update staged, the model's life
  // The replacement being issued. Belongs to the claim holder: kernels
  // launched during the update append here under the update stream's
  // update_m; once update_end has detached the group from the stream, the
  // committing thread alone uses it, with no lock.
  std::vector<replay_task> staging;
  // Tasks an update replaced in a spare list, left for the next claim
  // holder to destroy outside every lock (claim holder only).
  std::vector<replay_task> retired;
  // The describers of staging's and retired's tasks, moved with them
  // (task_list::describers), and descriptions a refilled list let go, for
  // the next claim holder to drop outside every lock.
  std::vector<task_describer> staging_describers;
  std::vector<task_describer> retired_describers;
  std::vector<std::vector<kernel_argument>> retired_arguments;
  // The last swap an update enqueued (claim holder only): its list, its
  // stream and its index there. Weak, so the replaced tasks (and what they
  // keep alive) leave with their group.
  std::weak_ptr<task_list> last_swap;
  const void* last_swap_stream = nullptr;
  std::uint64_t last_swap_index = 0;
  std::vector<replay_task> building;  // while marking (under the device books' lock)
  std::vector<task_describer> building_describers;  // their describers

  // What executions use, on its own line: the execution streams' workers
  // lock `state` at every run of the group. The lock guards `tasks` and
  // `spares` (swapped by updates).
  alignas(64) std::atomic<std::uint32_t> state{0};
  std::shared_ptr<task_list> tasks;
  // Lists updates replaced, kept for later updates to refill, so a steady
  // stream of updates allocates nothing (several, because the update stream
  // may not have reached the last swap when the next update is issued).
  std::array<std::shared_ptr<task_list>, 4> spares;

  // RAII for the state lock.
  struct guard {
    explicit guard(group_state& g) noexcept : g(g), held(g.lock()) {}
    ~guard() { g.unlock(held); }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    group_state& g;
    std::uint32_t held;
  };

  // The replay of the group node: runs the list current when the execution
  // reaches the group.
  void run() {
    std::shared_ptr<task_list> list;
    {
      guard lock(*this);
      list = tasks;
      if (!list) return;
      list->runners.fetch_add(1, std::memory_order_relaxed);
    }
    struct done {
      task_list& l;
      ~done() { l.runners.fetch_sub(1, std::memory_order_release); }
    } finished{*list};
    for (const replay_task& t : list->tasks) t();
  }
  void replace(std::shared_ptr<task_list> list) {
    guard lock(*this);
    list->published = true;
    tasks.swap(list);
    for (auto& slot : spares) {
      if (!slot) {
        slot.swap(list);
        break;
      }
    }
    // a list no slot took is released after the lock
  }
  // Claim holder, `retired` empty: makes `staging` the group's tasks and
  // ends the claim, in one acquisition of the lock. The tasks go into a
  // spare list no execution runs any more (allocated only when none is
  // free); the spare's old tasks go to `retired`, for the next claim holder
  // to destroy outside every lock, and `staging` gets retired's (empty)
  // vector. Deletes the group if it was orphaned during the update.
  void publish_and_end_claim() {
    std::shared_ptr<task_list> fresh;  // released after the lock, like a list no slot took
    for (;;) {
      const std::uint32_t held = lock();
      std::shared_ptr<task_list>* into = nullptr;
      for (auto& slot : spares) {
        if (slot && slot->runners.load(std::memory_order_acquire) == 0) {
          into = &slot;  // a spare to refill: no allocation
          break;
        }
        if (!slot && fresh && into == nullptr) into = &slot;
      }
      if (into == nullptr && fresh) into = &fresh;  // every slot holds a running list: the old list leaves
      if (into != nullptr) {
        if (!*into) into->swap(fresh);
        task_list& list = **into;
        list.tasks.swap(staging);
        list.describers.swap(staging_describers);
        list.arguments.swap(retired_arguments);  // described from the tasks it held
        list.described = false;
        staging.swap(retired);
        staging_describers.swap(retired_describers);
        list.published = true;
        into->swap(tasks);  // the old list takes the slot (an execution may still run it)
        unlock(held & ~claimed);
        if (held & orphaned) delete this;
        return;
      }
      unlock(held);
      fresh = std::make_shared<task_list>();  // no spare is free: allocate outside the lock and retry
    }
  }
  // A list for an update to fill: a spare one that no execution runs any
  // more (one that started before the last swap may still run it).
  std::shared_ptr<task_list> take_spare(const void* claim) {
    std::shared_ptr<task_list> list;
    {
      guard lock(*this);
      for (auto& slot : spares) {
        if (slot && slot->runners.load(std::memory_order_acquire) == 0) {
          list = std::move(slot);
          list->published = false;
          list->claim = claim;
          break;
        }
      }
    }
    if (list) {
      list->tasks.clear();
      list->describers.clear();
      list->arguments.clear();  // described while it was the group's
      list->described = false;
    } else {
      list = std::make_shared<task_list>();
      list->published = false;
      list->claim = claim;
    }
    return list;
  }
  // Refills @p list, staged by @p claim and not yet swapped in, with @p with
  // (the list's previous tasks are left in @p with). False if its swap ran.
  bool refill_unpublished(task_list& list, const void* claim, std::vector<replay_task>& with,
                          std::vector<task_describer>& with_describers) {
    guard lock(*this);
    if (list.published || list.claim != claim) return false;
    list.tasks.swap(with);
    list.describers.swap(with_describers);
    return true;
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
