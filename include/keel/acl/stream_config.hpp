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
  static stream_handle create_configured_stream(device_type& dev, const keel::stream_options& options) {
    auto box = std::make_unique<stream_box>();
    dev.check(entered(dev).aclrtCreateStreamWithConfig(&box->native, options.priority,
                                                       static_cast<std::uint32_t>(options.flags)),
              "aclrtCreateStreamWithConfig");
    box->persistent = has_flags(options.flags, keel::stream_flags::persistent);  // a model can be built on it
    return stream_calls::register_created(dev, std::move(box));
  }
  static keel::stream_options configured_options(stream_handle s) {
    const api& a = entered(*s->dev);
    std::uint32_t flags = 0, priority = 0;
    s->dev->check(a.aclrtStreamGetFlags(s->native, &flags), "aclrtStreamGetFlags");
    s->dev->check(a.aclrtStreamGetPriority(s->native, &priority), "aclrtStreamGetPriority");
    return keel::stream_options{static_cast<keel::stream_flags>(flags), priority};
  }
  static std::int32_t runtime_stream_id(stream_handle s) {
    std::int32_t id = 0;
    s->dev->check(entered(*s->dev).aclrtStreamGetId(s->native, &id), "aclrtStreamGetId");
    return id;
  }
  static keel::stream_priority_range stream_priorities(device_type& dev) {
    keel::stream_priority_range range;
    dev.check(entered(dev).aclrtDeviceGetStreamPriorityRange(&range.least, &range.greatest),
              "aclrtDeviceGetStreamPriorityRange");
    return range;
  }
  // destroy_stream then neither synchronizes nor waits: aclrtDestroyStreamForce.
  static void discard_stream_work(stream_handle s) noexcept { s->forced = true; }
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
