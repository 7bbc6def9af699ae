// SPDX-License-Identifier: Apache-2.0
// Out-of-line functions of keel/acl/stream_config.hpp (stream_config_calls): included by the
// header (inline) unless KEEL_SEPARATE_COMPILATION is defined, and compiled
// once into keel_acl_runtime (src/keel_acl_separate.cpp) for the builds that
// define it. The one-line and template members stay in the header.
#pragma once

#include "keel/acl/stream_config.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
KEEL_DECL auto stream_config_calls::create_configured_stream(device_type& dev, const keel::stream_options& options) -> stream_handle {
  auto box = std::make_unique<stream_box>();
  dev.check(entered(dev).aclrtCreateStreamWithConfig(&box->native, options.priority,
                                                     static_cast<std::uint32_t>(options.flags)),
            "aclrtCreateStreamWithConfig");
  box->persistent = has_flags(options.flags, keel::stream_flags::persistent);  // a model can be built on it
  return stream_calls::register_created(dev, std::move(box));
}

KEEL_DECL auto stream_config_calls::configured_options(stream_handle s) -> keel::stream_options {
  const api& a = entered(*s->dev);
  std::uint32_t flags = 0, priority = 0;
  s->dev->check(a.aclrtStreamGetFlags(s->native, &flags), "aclrtStreamGetFlags");
  s->dev->check(a.aclrtStreamGetPriority(s->native, &priority), "aclrtStreamGetPriority");
  return keel::stream_options{static_cast<keel::stream_flags>(flags), priority};
}

KEEL_DECL auto stream_config_calls::runtime_stream_id(stream_handle s) -> std::int32_t {
  std::int32_t id = 0;
  s->dev->check(entered(*s->dev).aclrtStreamGetId(s->native, &id), "aclrtStreamGetId");
  return id;
}

KEEL_DECL auto stream_config_calls::stream_priorities(device_type& dev) -> keel::stream_priority_range {
  keel::stream_priority_range range;
  dev.check(entered(dev).aclrtDeviceGetStreamPriorityRange(&range.least, &range.greatest),
            "aclrtDeviceGetStreamPriorityRange");
  return range;
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
