// SPDX-License-Identifier: Apache-2.0
// The checked layer's context rules: which threads have a context current
// (keel's own books, whatever the runtime keeps), a destruction deferred
// until no thread has it current, and an explicit close refused meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "keel/core/error.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/**
 * @brief The checked layer's record of a context, embedded in the native
 * backend's context record: how many threads keel made it current on, and
 * whether its destruction waits for them.
 *
 * Ownership: part of the native record. Thread safety: atomic. Exceptions: none.
 */
struct context_books {
  /// Bit 31: destruction pending; the rest: the holds (live scopes, thread bindings).
  std::atomic<std::uint32_t> state{0};
  /// The destruction is pending while a thread has the context current.
  static constexpr std::uint32_t pending = 0x80000000u;
};

/**
 * @brief The context layer over native backend @p Native, mixed into a
 * backend beside checked::backend<Native>.
 *
 * A context is held by each live scope that made it current and by each
 * thread whose binding (make_current) it is; its destruction waits for the
 * last hold, and close() refuses while there is one.
 *
 * What @p Native supplies: `context_handle`, `books(context_handle)` →
 * context_books&, `create_native_context(device&)`, `destroy_native_context(c)
 * noexcept`, `native_context_device(c)`, `native_current_context(device&)`,
 * `make_context_current(c)` and `clear_current_context(device&) noexcept`
 * (the thread keeps no context keel made current).
 *
 * Ownership: none (static calls). Thread safety: every call is thread-safe;
 * the current context is per thread. Exceptions: keel::error naming the API
 * and the rule; a refused call changes nothing.
 */
template <class Native>
struct contexts {
  /// @cond KEEL_BACKEND_OPERATIONS
  using N = Native;
  using context_handle = typename N::context_handle;

  static context_handle create_context(typename N::device_type& dev) { return N::create_native_context(dev); }

  // Deferred while a thread has it current: the last thread to switch away
  // destroys it. Exactly one of this call and that switch sees the count
  // reach zero with the destruction pending.
  static void destroy_context(context_handle c) noexcept {
    const std::uint32_t before = N::books(c).state.fetch_or(context_books::pending, std::memory_order_acq_rel);
    if ((before & ~context_books::pending) == 0) N::destroy_native_context(c);
  }

  // The explicit, checked destruction: refused while any thread has the
  // context current through keel (the context stays as it was).
  static void close_context(context_handle c) {
    const std::uint32_t holds = N::books(c).state.load(std::memory_order_acquire) & ~context_books::pending;
    if (holds != 0)
      ::keel::detail::throw_composed(
          errc::invalid_state, "keel::context::close",
          {"the context is current (held by ", holds,
           " live context_scope(s) or thread binding(s)): end those scopes, or make another context "
           "current on those threads, before closing it"});
    destroy_context(c);
  }

  static typename N::device_type& context_device(context_handle c) noexcept { return N::native_context_device(c); }

  static context_handle current_context(typename N::device_type& dev) { return N::native_current_context(dev); }

  // make_current(): the thread's binding holds the context until the thread
  // makes another current (or ends). Inside a live scope the binding it
  // replaces is parked, not released: the scope may restore it.
  static void set_current_context(context_handle c) {
    if (c == context_handle{})
      throw_error(errc::invalid_handle, "keel::context::make_current", "no context: the handle is empty");
    N::make_context_current(c);
    thread_books& t = this_thread();
    if (t.bound == c) return;
    N::books(c).state.fetch_add(1, std::memory_order_acq_rel);
    const context_handle old = t.bound;
    t.bound = c;
    if (old == context_handle{}) return;
    if (t.depth == 0) return leave(old);
    try {
      t.parked.push_back(old);
    } catch (...) {
      t.leaked_parks = true;  // out of memory: the old binding keeps its hold (its destruction waits for good)
    }
  }

  // A scope's entry: c is made current and held by the scope (one atomic
  // operation); the context current before is held by whoever made it
  // current (an outer scope, or the thread's binding), so it outlives the scope.
  static context_handle enter_context(typename N::device_type& dev, context_handle c) {
    if (c == context_handle{})
      throw_error(errc::invalid_handle, "keel::context_scope", "no context: the handle is empty");
    thread_books& t = this_thread();
    t.scope_holds.reserve(t.scope_holds.size() + 1);  // before anything changes
    const context_handle previous = N::native_current_context(dev);
    N::make_context_current(c);
    N::books(c).state.fetch_add(1, std::memory_order_acq_rel);
    t.scope_holds.push_back(c);  // reserved above
    ++t.depth;
    return previous;
  }

  // A scope's exit: back to what was current when it began (none: the thread
  // keeps no keel context); a runtime failure is reported, not thrown.
  static void leave_context(typename N::device_type& dev, context_handle c, context_handle previous) noexcept {
    if (previous == context_handle{}) {
      N::clear_current_context(dev);
    } else {
      try {
        N::make_context_current(previous);
      } catch (...) {
        report_current_exception("keel::context_scope");
      }
    }
    leave(c);
    thread_books& t = this_thread();
    for (auto it = t.scope_holds.rbegin(); it != t.scope_holds.rend(); ++it) {
      if (*it == c) {  // the innermost hold of c: scopes end in reverse order
        t.scope_holds.erase(std::next(it).base());
        break;
      }
    }
    if (--t.depth == 0 && !t.parked.empty()) {
      // The outermost scope restored what was current when it began: the
      // binding parked first. Bindings made inside the scopes end.
      const context_handle restored = t.parked.front();
      leave(t.bound);
      for (std::size_t i = 1; i < t.parked.size(); ++i) leave(t.parked[i]);
      t.parked.clear();
      t.bound = restored;
    }
  }

 private:
  // This thread's holds: its binding (make_current), how many scopes are
  // live on it, and bindings replaced inside them. A thread that ends
  // releases what it holds.
  struct thread_books {
    context_handle bound{};
    int depth = 0;
    std::vector<context_handle> parked;
    // The contexts live scopes hold, innermost last: a scope destroyed on
    // another thread leaves its hold here, released when this thread ends.
    std::vector<context_handle> scope_holds;
    bool leaked_parks = false;
    thread_books() = default;
    thread_books(const thread_books&) = delete;
    thread_books& operator=(const thread_books&) = delete;
    ~thread_books() {
      leave(bound);
      for (context_handle parked_one : parked) leave(parked_one);
      for (context_handle held : scope_holds) leave(held);  // scopes destroyed on other threads
    }
  };
  static thread_books& this_thread() noexcept {
    thread_local thread_books t;
    return t;
  }
  static void leave(context_handle c) noexcept {
    if (c == context_handle{}) return;
    if (N::books(c).state.fetch_sub(1, std::memory_order_acq_rel) == (context_books::pending | 1u))
      N::destroy_native_context(c);
  }
  /// @endcond
};

} KEEL_END_NAMESPACE  // namespace keel::checked
