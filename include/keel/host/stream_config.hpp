// SPDX-License-Identifier: Apache-2.0
// The host backend's native stream-configuration calls: a stream remembers
// the flags and priority it was made with (the host runs every stream alike:
// the priority orders nothing, as CANN's "scheduling hint"), its runtime id is
// its keel id, and a forced destruction skips the work not yet started.
#pragma once

#include <cstdint>
#include <exception>

#include "keel/core/error.hpp"
#include "keel/host/detail/handles.hpp"
#include "keel/host/stream.hpp"
#include "keel/runtime/stream_options.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct stream_config_calls : native_types {
  static stream_handle create_configured_stream(device_type& d, const stream_options& options) {
    stream_handle s = stream_calls::create_stream(d);
    s->flags = static_cast<std::uint32_t>(options.flags);
    s->priority = options.priority;
    s->persistent = has_flags(options.flags, stream_flags::persistent);  // a model can be built on it
    return s;
  }
  static stream_options configured_options(stream_handle s) noexcept {
    return stream_options{static_cast<stream_flags>(s->flags), s->priority};
  }
  static std::int32_t runtime_stream_id(stream_handle s) noexcept { return static_cast<std::int32_t>(s->id); }
  static stream_priority_range stream_priorities(device_type&) noexcept { return stream_priority_range{7, 0}; }

  // The worker skips work once the stream has failed (control work, such as
  // event records, still runs, so no waiter elsewhere hangs): the discard is
  // a failure nobody is told about. The task running now finishes.
  static void discard_stream_work(stream_handle s) noexcept {
    s->forced = true;
    try {
      s->record_failure(std::make_exception_ptr(
          keel::error(errc::invalid_state, "keel::stream::discard", "the stream's work was discarded")));
    } catch (...) {
      // out of memory for the text: the flag below still skips the work
      s->failed.store(true, std::memory_order_release);
    }
  }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
