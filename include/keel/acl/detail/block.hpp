// SPDX-License-Identifier: Apache-2.0
// The ACL backend's allocation record, and a release waiting for its stream
// to pass the release point.
#pragma once

#include <cstddef>
#include <memory>

#include "keel/acl/detail/stream_state.hpp"
#include "keel/acl/types.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
// Memory released on a stream, freed once the stream passes `event`.
struct deferred_release {
  event_handle event = nullptr;
  stream_handle stream = nullptr;  // where it was released (ACL's handle)
  std::shared_ptr<void> alloc;
};

struct block {
  void* data = nullptr;
  std::size_t bytes = 0;
  memory_kind kind = memory_kind::device;
  stream_box* stream = nullptr;
  std::shared_ptr<void> alloc;  // its deleter frees with the matching ACL call
};

/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
