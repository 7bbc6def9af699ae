// SPDX-License-Identifier: Apache-2.0
// The backend requirement: the native types and calls a runtime backend
// supplies to the handle templates, in layers (streams, events, memory,
// capture, task groups), each a trait, a C++20 concept and a diagnostic that
// names the missing call. A runtime backend supplies every layer.
#pragma once

#include <type_traits>

#include "keel/runtime/backend/capture.hpp"
#include "keel/runtime/backend/event.hpp"
#include "keel/runtime/backend/memory.hpp"
#include "keel/runtime/backend/queries.hpp"
#include "keel/runtime/backend/stream.hpp"
#include "keel/runtime/backend/task_group.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief What a backend `B` supplies: every layer. Every call is a static
 * member; native handles are trivially copyable and value-initialise to "no
 * handle"; every call that can fail throws keel::error and changes nothing.
 *
 * The layers, each with its own trait (`is_stream_backend_v`, ...), concept
 * (`stream_backend`, ...) and list of calls:
 * - streams (keel/runtime/backend/stream.hpp): devices, streams, host
 *   callables, kernel launches, copies;
 * - events (keel/runtime/backend/event.hpp);
 * - memory (keel/runtime/backend/memory.hpp);
 * - capture and models (keel/runtime/backend/capture.hpp);
 * - task groups and updates (keel/runtime/backend/task_group.hpp).
 *
 * Each handle template needs only the layers it uses (basic_stream: streams;
 * basic_event: events; basic_capture_scope: capture; ...), and a backend that
 * lacks one of their calls gets a static_assert naming the layer and the call.
 * Optional behaviour is a query with a default (keel/runtime/backend/queries.hpp).
 */
template <class B>
struct is_runtime_backend
    : std::bool_constant<is_stream_backend_v<B> && is_event_backend_v<B> && is_memory_backend_v<B> &&
                         is_capture_backend_v<B> && is_task_group_backend_v<B>> {};

/** @brief Whether B supplies every layer (see is_runtime_backend). */
template <class B>
inline constexpr bool is_runtime_backend_v = is_runtime_backend<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The backend requirement as a C++20 concept (see is_runtime_backend). */
template <class B>
concept runtime_backend = is_runtime_backend_v<B>;
/** @brief A template parameter constrained on every layer (`class` before C++20). */
#define KEEL_RUNTIME_BACKEND ::keel::runtime_backend
#else
#define KEEL_RUNTIME_BACKEND class
#endif

/// @cond
namespace detail {
// Every layer's diagnostics, for code that needs a whole runtime backend.
template <class B>
struct check_backend {
  static constexpr bool value = stream_layer::check<B>::value && event_layer::check<B>::value &&
                                memory_layer::check<B>::value && capture_layer::check<B>::value &&
                                task_group_layer::check<B>::value;
};
}  // namespace detail
/// @endcond

KEEL_END_NAMESPACE  // namespace keel
