// SPDX-License-Identifier: Apache-2.0
// The host backend's allocation record: memory counted against the device's
// limit until its stream-ordered release has run.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <new>

#include "keel/host/detail/stream_state.hpp"
#include "keel/host/detail/task.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host::detail {

/// @cond
struct block : ref_counted {
  block(std::size_t n, memory_kind k, stream_state* s)
      : data(::operator new(std::max<std::size_t>(n, 1), std::align_val_t{64})), bytes(n), kind(k), stream(s) {}
  ~block() {
    ::operator delete(data, std::align_val_t{64});
    stream->dev->memory_in_use_.fetch_sub(bytes, std::memory_order_acq_rel);  // reserved by backend::allocate
  }
  void* data;
  std::size_t bytes;
  memory_kind kind;
  ref_ptr<stream_state> stream;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::host::detail
