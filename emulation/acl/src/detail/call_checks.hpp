// SPDX-License-Identifier: Apache-2.0
// The caller checks the SOMA pool and allocator entry points make first,
// through the runtime's own public calls (as CANN's documented statuses for
// them follow from aclrtGetDevice and aclrtStreamQuery).
#pragma once

#include <cstdint>

#include "acl/acl.h"

namespace keel::host {
class device;
}  // namespace keel::host

namespace keel::acl_emulation::detail {

// The emulated devices (device.cpp; also declared in state.hpp).
std::int32_t device_count() noexcept;
keel::host::device& dev(std::int32_t id);

// The calling thread's context, as every runtime call needs it.
inline aclError context_status() {
  std::int32_t id = -1;
  return aclrtGetDevice(&id);
}

// A stream the caller may use: null is an invalid parameter; otherwise what
// aclrtStreamQuery says of it.
inline aclError stream_status(aclrtStream s) {
  if (s == nullptr) return ACL_ERROR_INVALID_PARAM;
  aclrtStreamStatus st{};
  return aclrtStreamQuery(s, &st);
}

}  // namespace keel::acl_emulation::detail
