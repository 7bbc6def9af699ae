// SPDX-License-Identifier: Apache-2.0
// The runtime templates instantiated with the host backend, under short names.
#pragma once

#include "keel/host/backend.hpp"
#include "keel/host/device.hpp"
#include "keel/runtime/runtime.hpp"

namespace keel::host {

static_assert(is_runtime_backend_v<backend>, "the host backend must model the runtime backend requirement");

using stream = basic_stream<backend>;
using stream_ref = basic_stream_ref<backend>;
using event = basic_event<backend>;
using event_ref = basic_event_ref<backend>;
using external_event_pool = basic_external_event_pool<backend>;
using pooled_event = basic_pooled_event<backend>;
using model = basic_model<backend>;
using model_ref = basic_model_ref<backend>;
using capture_scope = basic_capture_scope<backend>;
using task_group = basic_task_group<backend>;
using task_group_ref = basic_task_group_ref<backend>;
using task_group_scope = basic_task_group_scope<backend>;
using update_scope = basic_update_scope<backend>;
using concurrent_update = basic_concurrent_update<backend>;
using device_buffer = basic_device_buffer<backend>;
using pinned_buffer = basic_pinned_buffer<backend>;

/** @brief Milliseconds between two completed timing events (see keel::elapsed_time). */
inline float elapsed_time(event_ref start, event_ref end) { return keel::elapsed_time<backend>(start, end); }

/** @brief Blocks until every stream of @p dev is idle. Unsafe during capture (per mode). */
inline void synchronize(device& dev) { backend::synchronize_device(dev); }

/** @brief Whether the calling thread began a capture in progress on @p dev (and in which mode). */
inline capture_info thread_capture_status(device& dev) { return backend::thread_capture_status(dev); }

}  // namespace keel::host
