// SPDX-License-Identifier: Apache-2.0
// What a model's tasks use, kept by the checked layer for a native backend
// that keeps nothing of a kernel once its body has run (its body runs at
// issue and hands the runtime raw addresses: ACL): every captured kernel
// with its arguments (memory spans' owners, plans), and every replacement
// an update commits (a task group's, a task's, a whole model's), each
// replacing the one before it under the same key. A model's table is
// immutable once published: an execution keeps the table it ran with until
// its stream passes it, and an update keeps the table it replaced until its
// stream passes the update, so nothing a running task uses goes early.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/runtime/backend/detection.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/// @cond
namespace detail {

// A launch argument that borrows from the launching call (ACL's
// plan_argument borrows the executor's plan and the workspace's owner) takes
// ownership before its kernel is kept past that call.
template <class T>
using keep_for_later_call = decltype(std::declval<T&>().keep_for_later());
template <class K>
using bound_arguments = decltype(std::declval<K&>().args);
template <class T>
void keep_for_later(T& argument) {
  if constexpr (keel::detail::is_detected_v<keep_for_later_call, T>) argument.keep_for_later();
}
template <class K>
void keep_arguments_for_later(K& kernel) {
  if constexpr (keel::detail::is_detected_v<bound_arguments, K>)
    std::apply([](auto&... a) { (keep_for_later(a), ...); }, kernel.args);
}

// A kernel moved to the heap with its arguments, owning what they borrowed:
// what a capture or a staged update keeps.
template <class F>
std::shared_ptr<std::decay_t<F>> hold_kernel(F&& f) {
  auto held = std::make_shared<std::decay_t<F>>(std::forward<F>(f));
  keep_arguments_for_later(*held);
  return held;
}

// The kernel a native backend stages for later, sharing the held one (the
// checked layer keeps the same object as the task's uses).
template <class F>
struct held_kernel {
  std::shared_ptr<F> kernel;
  template <class Context>
  void operator()(Context& ctx) const {
    (*kernel)(ctx);
  }
};

}  // namespace detail

/**
 * @brief The key a model's uses are kept under: everything its capture
 * issued; a task group's task; a task outside groups (by its index in the
 * model's list); or what a whole-model update gave every such task.
 */
struct uses_key {
  enum class kind : std::uint8_t { captured, group_task, task, whole_model };
  kind what = kind::captured;
  std::uint64_t a = 0;  // group_task: the group's id; task: the task's index
  std::uint64_t b = 0;  // group_task: the position in the group
  friend bool operator==(const uses_key& x, const uses_key& y) noexcept {
    return x.what == y.what && x.a == y.a && x.b == y.b;
  }
};

/**
 * @brief A change an update stages: @p owner replaces what @p key held
 * (null: the task runs nothing of its own any more, as a disabled one). A
 * whole_model change also drops every task entry committed before it.
 */
struct uses_change {
  uses_key key;
  std::shared_ptr<void> owner;
};

/**
 * @brief What a model's tasks use: an immutable table, replaced whole by
 * each commit. Shared by the model's books and (weakly) its task groups'.
 *
 * Ownership: the table's owners live while the model (or an execution or
 * update still holding a table) does. Thread safety: every member is
 * thread-safe. Exceptions: std::bad_alloc only (nothing changes then).
 */
class model_uses {
 public:
  struct entry {
    uses_key key;
    std::uint64_t sequence = 0;  // the claim of the update that set it: a later one wins
    std::shared_ptr<void> owner;
  };
  using table = std::vector<entry>;

  /// The table executions issued now run with (null: nothing kept).
  std::shared_ptr<void> snapshot() const {
    std::lock_guard<std::mutex> lock(m_);
    return current_;
  }

  /// What the capture issued; kept as long as the model.
  void set_captured(std::vector<std::shared_ptr<void>> captured) {
    if (captured.empty()) return;
    auto all = std::make_shared<std::vector<std::shared_ptr<void>>>(std::move(captured));
    std::vector<uses_change> changes;
    changes.push_back(uses_change{uses_key{}, std::move(all)});
    apply(0, changes, room(1));
  }

  /**
   * @brief Room for the table after @p changes more entries, made before an
   * update commits so that publishing its uses after the commit allocates
   * nothing. @throws std::bad_alloc.
   */
  std::shared_ptr<table> room(std::size_t changes) const {
    auto next = std::make_shared<table>();
    std::size_t now = 0;
    {
      std::lock_guard<std::mutex> lock(m_);
      if (current_) now = static_cast<const table*>(current_.get())->size();
    }
    next->reserve(now + changes + 8);  // a few keys other updates may add meanwhile
    return next;
  }

  /**
   * @brief Publishes @p next (from room()) as the table with @p changes
   * applied, made under an update claim numbered @p sequence (a change older
   * than what its key holds is dropped: a later update committed first).
   * Returns the table replaced, which the caller keeps until the update's
   * stream passes it. Allocates only when other updates outgrew the room.
   */
  std::shared_ptr<void> apply(std::uint64_t sequence, std::vector<uses_change>& changes, std::shared_ptr<table> next) {
    if (changes.empty()) return nullptr;
    std::lock_guard<std::mutex> lock(m_);
    if (current_) {
      const table& now = *static_cast<const table*>(current_.get());
      if (next->capacity() < now.size() + changes.size()) next->reserve(now.size() + changes.size());
      next->assign(now.begin(), now.end());
    }
    for (uses_change& c : changes) {
      if (c.key.what == uses_key::kind::whole_model) {
        next->erase(std::remove_if(next->begin(), next->end(),
                                   [&](const entry& e) {
                                     return e.key.what == uses_key::kind::task && e.sequence <= sequence;
                                   }),
                    next->end());
      }
      auto it = std::find_if(next->begin(), next->end(), [&](const entry& e) { return e.key == c.key; });
      if (it != next->end()) {
        if (it->sequence > sequence) continue;  // a later update's owner stays
        if (c.owner) {
          it->owner = std::move(c.owner);
          it->sequence = sequence;
        } else {
          next->erase(it);
        }
      } else if (c.owner) {
        next->push_back(entry{c.key, sequence, std::move(c.owner)});
      }
    }
    std::shared_ptr<void> old = std::move(current_);
    current_ = std::move(next);
    return old;
  }

  /// The next claim's number (caller holds the claim).
  std::uint64_t next_sequence() noexcept { return sequence_.fetch_add(1, std::memory_order_relaxed) + 1; }

 private:
  mutable std::mutex m_;
  std::shared_ptr<void> current_;  // a const table; null until something is kept
  std::atomic<std::uint64_t> sequence_{0};
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::checked
