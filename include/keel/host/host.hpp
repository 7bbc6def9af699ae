// SPDX-License-Identifier: Apache-2.0
// The runtime templates instantiated with the host backend, under short names.
#pragma once

#include <chrono>

#include "keel/host/backend.hpp"
#include "keel/host/device.hpp"
#include "keel/runtime/backend/stream_config.hpp"
#include "keel/runtime/context.hpp"
#include "keel/runtime/condition.hpp"
#include "keel/runtime/model_builder.hpp"
#include "keel/runtime/fenced_update.hpp"
#include "keel/runtime/model_update.hpp"
#include "keel/runtime/runtime.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace host {

static_assert(is_runtime_backend_v<backend>, "the host backend must model the runtime backend requirement");

KEEL_RUNTIME_HANDLE_ALIASES(backend)
KEEL_RUNTIME_CONTEXT_ALIASES(backend)
static_assert(is_stream_config_backend_v<backend>, "the host backend has the stream-configuration layer");
KEEL_RUNTIME_BUILT_MODEL_ALIASES(backend)
KEEL_RUNTIME_CONDITIONAL_ALIASES(backend)
KEEL_RUNTIME_MODEL_UPDATE_ALIASES(backend)
KEEL_RUNTIME_FENCED_MODEL_ALIASES(backend)

/** @brief Blocks until every stream of @p dev is idle. Unsafe during capture (per mode). */
inline void synchronize(device& dev) { backend::synchronize_device(dev); }

/**
 * @brief synchronize(dev), bounded: @throws keel::error timeout when a stream
 * is still busy after @p timeout (the work goes on, nothing is lost).
 */
template <class Rep, class Period>
void synchronize(device& dev, std::chrono::duration<Rep, Period> timeout) {
  backend::synchronize_device_for(dev, keel::detail::to_wait_budget(timeout));
}

/** @brief Whether the calling thread began a capture in progress on @p dev (and in which mode). */
inline capture_info thread_capture_status(device& dev) { return backend::thread_capture_status(dev); }

} KEEL_END_NAMESPACE  // namespace keel::host
