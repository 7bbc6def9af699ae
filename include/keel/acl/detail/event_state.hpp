// SPDX-License-Identifier: Apache-2.0
// The ACL backend's event record: the aclrtEvent and the flags it was made
// with (ACL cannot be asked them).
#pragma once

#include <atomic>

#include "keel/acl/detail/stream_state.hpp"
#include "keel/acl/types.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

class device;

namespace detail {

/// @cond
struct event_box {
  event_handle native = nullptr;
  device* dev = nullptr;
  keel::event_flags flags = keel::event_flags::default_;
  // Whether the device owns the record (viewed from elsewhere, or released):
  // keel never destroys the ACL event then. Changed under the registry's lock.
  std::atomic<bool> adopted{false};
  // Whether a record of the event may lie in a capture keel did not begin:
  // its aclrtEvent left keel or came from elsewhere, or a foreign stream
  // (stream_box::foreign) recorded it. A stream that waits on it becomes
  // foreign (it may have joined that capture). Never cleared.
  std::atomic<bool> foreign{false};
  checked::event_books<stream_box*> books;  // the checked layer's
};
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
