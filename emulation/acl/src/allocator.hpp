// SPDX-License-Identifier: Apache-2.0
// Inside the emulation: an aclnn operator's internal memory (its workspace,
// when the caller passed none) from the allocator registered on the stream it
// runs on (aclrtAllocatorRegister), given back when the operator has enqueued
// its work (the allocator orders the release on the stream).
#pragma once

#include <cstddef>

#include "acl/acl.h"

namespace keel_emulation {

class stream_workspace {
 public:
  stream_workspace() = default;
  stream_workspace(const stream_workspace&) = delete;
  stream_workspace& operator=(const stream_workspace&) = delete;
  ~stream_workspace();
  /// Takes @p bytes from @p stream's registered allocator; false when it has none (or it refused).
  bool take(aclrtStream stream, std::size_t bytes);
  void* address() const noexcept { return address_; }

 private:
  aclrtAllocator object_ = nullptr;
  aclrtAllocatorFreeFunc free_ = nullptr;
  aclrtAllocatorBlock block_ = nullptr;
  void* address_ = nullptr;
};

}  // namespace keel_emulation
