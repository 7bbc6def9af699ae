// SPDX-License-Identifier: Apache-2.0
// keel's stream-ordered memory pool on the ACL backend: keel's own pool over
// aclrtMalloc / aclrtMallocHost, reused in stream order through ACL events.
#pragma once

#include "keel/acl/backend.hpp"
#include "keel/runtime/memory_pool.hpp"

namespace keel::acl {

/// A stream-ordered memory pool on an ACL device (see keel::basic_memory_pool).
using memory_pool = ::keel::basic_memory_pool<backend>;
/// A non-owning view of an ACL memory pool.
using memory_pool_ref = ::keel::basic_memory_pool_ref<backend>;
/// An allocation from an ACL memory pool.
using pool_buffer = ::keel::basic_pool_buffer<backend>;

}  // namespace keel::acl
