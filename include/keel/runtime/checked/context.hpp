// SPDX-License-Identifier: Apache-2.0
// The checked layer's context rules: which threads have a context current
// (keel's own books, whatever the runtime keeps), a destruction deferred
// until no thread has it current, and an explicit close refused meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

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
  /// Bit 31: destruction pending; the rest: threads that have it current through keel.
  std::atomic<std::uint32_t> state{0};
  /// The destruction is pending while a thread has the context current.
  static constexpr std::uint32_t pending = 0x80000000u;
};

/**
 * @brief The context layer over native backend @p Native, mixed into a
 * backend beside checked::backend<Native>.
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
    const std::uint32_t threads = N::books(c).state.load(std::memory_order_acquire) & ~context_books::pending;
    if (threads != 0)
      throw_error(errc::invalid_state, "keel::context::close",
                  "the context is current on " + std::to_string(threads) +
                      " thread(s): end their context_scope (or make another context current there) before closing it");
    destroy_context(c);
  }

  static typename N::device_type& context_device(context_handle c) noexcept { return N::native_context_device(c); }

  static context_handle current_context(typename N::device_type& dev) { return N::native_current_context(dev); }

  static void set_current_context(context_handle c) {
    if (c == context_handle{})
      throw_error(errc::invalid_handle, "keel::context::make_current", "no context: the handle is empty");
    context_handle& mine = made_current();
    if (mine == c) return N::make_context_current(c);  // the runtime's binding may have moved; the books have not
    N::make_context_current(c);
    N::books(c).state.fetch_add(1, std::memory_order_acq_rel);
    leave(mine);
    mine = c;
  }

  // A scope's exit: back to what was current when it began (none: the
  // thread keeps no keel context). A runtime failure is reported, not thrown.
  static void restore_current_context(typename N::device_type& dev, context_handle c) noexcept {
    if (c == context_handle{}) {
      N::clear_current_context(dev);
      leave(made_current());
      made_current() = context_handle{};
      return;
    }
    try {
      set_current_context(c);
    } catch (...) {
      report_current_exception("keel::context_scope");
    }
  }

 private:
  // The context keel last made current on this thread (per native backend).
  // A thread that ends with a context current leaves it then.
  struct current_slot {
    context_handle c{};
    current_slot() = default;
    current_slot(const current_slot&) = delete;
    current_slot& operator=(const current_slot&) = delete;
    ~current_slot() { leave(c); }
  };
  static context_handle& made_current() noexcept {
    thread_local current_slot slot;
    return slot.c;
  }
  static void leave(context_handle c) noexcept {
    if (c == context_handle{}) return;
    if (N::books(c).state.fetch_sub(1, std::memory_order_acq_rel) == (context_books::pending | 1u))
      N::destroy_native_context(c);
  }
  /// @endcond
};

} KEEL_END_NAMESPACE  // namespace keel::checked
