// SPDX-License-Identifier: Apache-2.0
// The runtime templates, without a backend.
#pragma once

#include "keel/runtime/backend.hpp"
#include "keel/runtime/buffer.hpp"
#include "keel/runtime/event.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/task_group.hpp"
#include "keel/runtime/types.hpp"

/**
 * @brief Declares, in the current namespace, the short names of the handles
 * of one layer over one backend; a backend that supplies only some layers
 * (streams and events, say) spells only those:
 * `KEEL_RUNTIME_STREAM_ALIASES(backend) KEEL_RUNTIME_EVENT_ALIASES(backend)`.
 */
#define KEEL_RUNTIME_STREAM_ALIASES(Backend)            \
  using stream = ::keel::basic_stream<Backend>;         \
  using stream_ref = ::keel::basic_stream_ref<Backend>;
/** @brief The event layer's handles (see KEEL_RUNTIME_STREAM_ALIASES). */
#define KEEL_RUNTIME_EVENT_ALIASES(Backend)                                  \
  using event = ::keel::basic_event<Backend>;                                \
  using event_ref = ::keel::basic_event_ref<Backend>;                        \
  using external_event_pool = ::keel::basic_external_event_pool<Backend>;    \
  using pooled_event = ::keel::basic_pooled_event<Backend>;
/** @brief The memory layer's handles (see KEEL_RUNTIME_STREAM_ALIASES). */
#define KEEL_RUNTIME_MEMORY_ALIASES(Backend)                    \
  using device_buffer = ::keel::basic_device_buffer<Backend>;   \
  using pinned_buffer = ::keel::basic_pinned_buffer<Backend>;
/** @brief The capture layer's handles (see KEEL_RUNTIME_STREAM_ALIASES). */
#define KEEL_RUNTIME_CAPTURE_ALIASES(Backend)                   \
  using model = ::keel::basic_model<Backend>;                   \
  using model_ref = ::keel::basic_model_ref<Backend>;           \
  using capture_scope = ::keel::basic_capture_scope<Backend>;
/** @brief The task-group layer's handles (see KEEL_RUNTIME_STREAM_ALIASES). */
#define KEEL_RUNTIME_TASK_GROUP_ALIASES(Backend)                           \
  using task_group = ::keel::basic_task_group<Backend>;                    \
  using task_group_ref = ::keel::basic_task_group_ref<Backend>;            \
  using task_group_scope = ::keel::basic_task_group_scope<Backend>;        \
  using update_scope = ::keel::basic_update_scope<Backend>;                \
  using concurrent_update = ::keel::basic_concurrent_update<Backend>;

/**
 * @brief Declares, in the current namespace, the short names of every
 * runtime handle over one backend (`stream`, `event`, `model`, ...), so each
 * backend spells the list once: `namespace keel::host { KEEL_RUNTIME_HANDLE_ALIASES(backend) }`.
 */
#define KEEL_RUNTIME_HANDLE_ALIASES(Backend)  \
  KEEL_RUNTIME_STREAM_ALIASES(Backend)        \
  KEEL_RUNTIME_EVENT_ALIASES(Backend)         \
  KEEL_RUNTIME_CAPTURE_ALIASES(Backend)       \
  KEEL_RUNTIME_TASK_GROUP_ALIASES(Backend)    \
  KEEL_RUNTIME_MEMORY_ALIASES(Backend)
