// SPDX-License-Identifier: Apache-2.0
// The host backend's native handle types, and where the checked layer finds
// its books in each record: what every part of the native backend shares.
#pragma once

#include "keel/host/detail/block.hpp"
#include "keel/host/detail/capture_state.hpp"
#include "keel/host/detail/event_state.hpp"
#include "keel/host/detail/group_state.hpp"
#include "keel/host/detail/stream_state.hpp"
#include "keel/host/device.hpp"
#include "keel/runtime/checked/books.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct native_types {
  using device_type = device;
  using stream_handle = stream_state*;
  using event_handle = event_state*;
  using model_handle = model_state*;
  using group_handle = group_state*;
  using buffer_handle = block*;
  using launch_context = host::launch_context;

  static constexpr const char* name = "host";

  static checked::device_books<stream_state*>& books(device_type& d) noexcept { return d.state().books; }
  static auto& books(stream_handle s) noexcept { return s->books; }
  static auto& books(event_handle e) noexcept { return e->books; }
  static checked::group_books& books(group_handle g) noexcept { return g->books; }
  static checked::model_books& books(model_handle m) noexcept { return m->books; }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
