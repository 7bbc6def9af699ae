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
#include <cstddef>
#include <cstdint>
#include <new>
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

// What a capture keeps of its launches: objects placed one after another in
// blocks that never move, each block twice the last, so keeping one
// allocates only when a block fills (a capture of n launches makes about
// log2(n) allocations, not n). Objects stay at their address until the
// whole goes; one can be destroyed early (discard) when its launch failed.
// Not thread-safe (the capture books' lock guards a capture's).
class kept_objects {
 public:
  struct node {
    void (*destroy)(node*) noexcept = nullptr;  // null: discarded
    node* next = nullptr;
  };

  kept_objects() noexcept = default;
  kept_objects(const kept_objects&) = delete;
  kept_objects& operator=(const kept_objects&) = delete;
  kept_objects(kept_objects&& other) noexcept { take(other); }
  kept_objects& operator=(kept_objects&& other) noexcept {
    if (this != &other) {
      clear();
      take(other);
    }
    return *this;
  }
  ~kept_objects() { clear(); }

  bool empty() const noexcept { return first_ == nullptr; }

  /**
   * Keeps a T made from @p args; returns it and its node (for discard).
   * Strong guarantee: nothing is kept when it throws (std::bad_alloc, or
   * what T's constructor throws).
   */
  template <class T, class... A>
  std::pair<T*, node*> emplace(A&&... args) {
    if constexpr (alignof(node_of<T>) > alignof(std::max_align_t)) {
      // Over-aligned: kept through a shared owner, placed as any other.
      auto owner = std::make_shared<T>(std::forward<A>(args)...);
      T* object = owner.get();
      return {object, emplace<std::shared_ptr<T>>(std::move(owner)).second};
    } else {
      unsigned char* at = room(sizeof(node_of<T>), alignof(node_of<T>));  // may throw: nothing kept
      node_of<T>* n = ::new (static_cast<void*>(at)) node_of<T>(std::forward<A>(args)...);  // may throw: room unused
      head_->used = static_cast<std::size_t>(at - data(head_)) + sizeof(node_of<T>);
      n->destroy = &destroy_node<T>;
      if (last_ != nullptr) {
        last_->next = n;
      } else {
        first_ = n;
      }
      last_ = n;
      return {&n->value, n};
    }
  }

  /// Destroys the object of @p n (one of this whole's) now; its room stays.
  static void discard(node* n) noexcept {
    if (n->destroy == nullptr) return;
    void (*const destroy)(node*) noexcept = std::exchange(n->destroy, nullptr);
    destroy(n);
  }

  /// Takes every object of @p other (which is left empty). Throws: nothing.
  void splice(kept_objects& other) noexcept {
    if (this == &other || other.head_ == nullptr) return;
    if (other.first_ != nullptr) {
      if (last_ != nullptr) {
        last_->next = other.first_;
      } else {
        first_ = other.first_;
      }
      last_ = other.last_;
    }
    if (head_ == nullptr) {
      head_ = other.head_;
    } else {
      block* tail = head_;
      while (tail->next != nullptr) tail = tail->next;
      tail->next = other.head_;
    }
    other.head_ = nullptr;
    other.first_ = other.last_ = nullptr;
  }

  /// Destroys every object, in the order kept, and frees the blocks.
  void clear() noexcept {
    for (node* n = first_; n != nullptr;) {
      node* const next = n->next;
      discard(n);
      n = next;
    }
    first_ = last_ = nullptr;
    while (head_ != nullptr) {
      block* const next = head_->next;
      ::operator delete(static_cast<void*>(head_));
      head_ = next;
    }
  }

 private:
  template <class T>
  struct node_of final : node {
    template <class... A>
    explicit node_of(A&&... args) : value(std::forward<A>(args)...) {}
    T value;
  };
  template <class T>
  static void destroy_node(node* n) noexcept {
    static_cast<node_of<T>*>(n)->~node_of<T>();
  }
  struct alignas(std::max_align_t) block {
    block* next;  // the block made before it
    std::size_t size;
    std::size_t used;
  };
  static constexpr std::size_t first_block = 4096;  // a hundred operator launches fit in two blocks
  static unsigned char* data(block* b) noexcept { return reinterpret_cast<unsigned char*>(b + 1); }

  // Room for @p size bytes aligned to @p align in the newest block, made
  // when it has none. Strong guarantee.
  unsigned char* room(std::size_t size, std::size_t align) {
    if (head_ != nullptr) {
      const std::size_t offset = (head_->used + align - 1) / align * align;
      if (offset <= head_->size && head_->size - offset >= size) return data(head_) + offset;
    }
    const std::size_t bytes = std::max(size, head_ != nullptr ? 2 * head_->size : first_block);
    auto* b = static_cast<block*>(::operator new(sizeof(block) + bytes));
    b->next = head_;
    b->size = bytes;
    b->used = 0;
    head_ = b;
    return data(b);  // aligned as std::max_align_t, which covers align
  }
  void take(kept_objects& other) noexcept {
    head_ = std::exchange(other.head_, nullptr);
    first_ = std::exchange(other.first_, nullptr);
    last_ = std::exchange(other.last_, nullptr);
  }

  block* head_ = nullptr;  // the newest block, where the next object goes
  node* first_ = nullptr;
  node* last_ = nullptr;
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

  /**
   * What the capture issued, taken from @p captured (left empty); kept as
   * long as the model, with what an earlier call kept (a capture whose end
   * the runtime refused and that went on). Strong guarantee: @p captured
   * keeps everything when it throws (std::bad_alloc).
   */
  void set_captured(detail::kept_objects& captured) {
    if (captured.empty()) return;
    auto all = std::make_shared<captured_uses>();
    std::vector<uses_change> changes;
    changes.reserve(1);
    std::shared_ptr<table> next = room(1);
    {
      std::lock_guard<std::mutex> lock(m_);
      if (current_) {
        const table& now = *static_cast<const table*>(current_.get());
        for (const entry& e : now)
          if (e.key == uses_key{}) all->earlier = e.owner;
      }
    }
    all->kept = std::move(captured);  // cannot throw
    changes.push_back(uses_change{uses_key{}, std::move(all)});  // reserved: cannot throw
    apply(0, changes, std::move(next));  // room made: cannot throw
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
  // What one capture kept, and what the same capture kept before a refused end.
  struct captured_uses {
    detail::kept_objects kept;
    std::shared_ptr<void> earlier;
  };

  mutable std::mutex m_;
  std::shared_ptr<void> current_;  // a const table; null until something is kept
  std::atomic<std::uint64_t> sequence_{0};
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::checked
