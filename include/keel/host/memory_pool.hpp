// SPDX-License-Identifier: Apache-2.0
// keel's stream-ordered memory pool on the host backend: keel's own pool over
// the host device's memory accounting (device_options::memory_limit counts
// the bytes a pool reserves, in use or idle), and pools registered as a
// stream's allocator.
#pragma once

#include "keel/host/backend.hpp"
#include "keel/host/device.hpp"
#include "keel/runtime/memory_pool.hpp"
#include "keel/runtime/stream_allocator.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host {

/// A stream-ordered memory pool on a host device (see keel::basic_memory_pool).
using memory_pool = ::keel::basic_memory_pool<backend>;
/// A non-owning view of a host memory pool.
using memory_pool_ref = ::keel::basic_memory_pool_ref<backend>;
/// An allocation from a host memory pool.
using pool_buffer = ::keel::basic_pool_buffer<backend>;
/// A pool registered as a host stream's allocator (keel's registry: the host backend's runtime has no other), RAII.
using allocator_registration = ::keel::basic_allocator_registration<backend>;

} KEEL_END_NAMESPACE  // namespace keel::host
