// SPDX-License-Identifier: Apache-2.0
// The host backend's native context calls: a context is a device and the
// per-thread binding that makes it the thread's current one (CANN's
// aclrtContext). The checked layer (checked/context.hpp) keeps which
// threads have it current and when it may go.
#pragma once

#include <atomic>
#include <cstdint>

#include "keel/host/detail/handles.hpp"
#include "keel/runtime/checked/context.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct context_state {
  explicit context_state(device_state& d) : dev(&d) { d.retain(); }
  ~context_state() { device_state::drop(dev); }
  context_state(const context_state&) = delete;
  context_state& operator=(const context_state&) = delete;

  device_state* dev;
  checked::context_books books;
};

struct context_calls : native_types {
  using context_handle = context_state*;

  static checked::context_books& books(context_handle c) noexcept { return c->books; }

  static context_handle create_native_context(device_type& d) { return new context_state(d.state()); }
  static void destroy_native_context(context_handle c) noexcept {
    if (current() == c) current() = nullptr;  // the destroying thread was the last to have it current
    delete c;
  }
  static device_type& native_context_device(context_handle c) noexcept { return c->dev->facade(); }
  static context_handle native_current_context(device_type&) noexcept { return current(); }
  static void make_context_current(context_handle c) noexcept { current() = c; }
  static void clear_current_context(device_type&) noexcept { current() = nullptr; }

 private:
  static context_handle& current() noexcept {
    thread_local context_handle c = nullptr;
    return c;
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
