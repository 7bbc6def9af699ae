// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native stream-configuration calls:
// aclrtCreateStreamWithConfig, aclrtStreamGetFlags / GetPriority / GetId,
// aclrtDeviceGetStreamPriorityRange and aclrtDestroyStreamForce.
#pragma once

#include <cstdint>
#include <memory>

#include "keel/acl/stream.hpp"
#include "keel/runtime/stream_options.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
struct stream_config_calls : native_types {
  KEEL_DECL static stream_handle create_configured_stream(device_type& dev, const keel::stream_options& options);
  KEEL_DECL static keel::stream_options configured_options(stream_handle s);
  KEEL_DECL static std::int32_t runtime_stream_id(stream_handle s);
  KEEL_DECL static keel::stream_priority_range stream_priorities(device_type& dev);
  // destroy_stream then neither synchronizes nor waits: aclrtDestroyStreamForce.
  static void discard_stream_work(stream_handle s) noexcept { s->forced = true; }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/stream_config.ipp"
#endif
