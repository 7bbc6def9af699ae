// SPDX-License-Identifier: Apache-2.0
// The introspection layer of the backend requirement (on top of the capture
// layer): a model's id, name, destroy callbacks and abort, and the list of
// its streams and tasks (keel/runtime/model_tasks.hpp). A backend that lacks
// it still captures and executes; the model's introspection calls then name
// the missing call at compile time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "keel/runtime/backend/capture.hpp"
#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail::introspection_layer {
template <class B> using m = typename B::model_handle;
using callback = void (*)(void*);

template <class B> using model_id = decltype(B::model_id(std::declval<m<B>>()));
template <class B> using set_model_name = decltype(B::set_model_name(std::declval<m<B>>(), std::string_view{}));
template <class B> using model_name = decltype(B::model_name(std::declval<m<B>>()));
template <class B> using add_destroy_callback =
    decltype(B::add_destroy_callback(std::declval<m<B>>(), callback{}, static_cast<void*>(nullptr)));
template <class B> using remove_destroy_callback =
    decltype(B::remove_destroy_callback(std::declval<m<B>>(), callback{}, static_cast<void*>(nullptr)));
template <class B> using abort_model = decltype(B::abort_model(std::declval<m<B>>()));
template <class B> using model_streams = decltype(B::model_streams(std::declval<m<B>>()));
template <class B> using model_tasks = decltype(B::model_tasks(std::declval<m<B>>()));

template <class B>
struct status {
  static constexpr bool value =
      capture_layer::status<B>::value && is_detected_exact_v<std::uint64_t, model_id, B> &&
      is_detected_v<set_model_name, B> && is_detected_exact_v<std::string, model_name, B> &&
      is_detected_v<add_destroy_callback, B> && is_detected_v<remove_destroy_callback, B> &&
      is_detected_v<abort_model, B> && is_detected_exact_v<std::vector<model_stream>, model_streams, B> &&
      is_detected_exact_v<std::vector<task_info>, model_tasks, B>;
};

template <class B>
struct check {
  static_assert(is_detected_exact_v<std::uint64_t, model_id, B>,
                KEEL_DETAIL_BACKEND_LACKS("introspection", "call model_id(model_handle) -> std::uint64_t"));
  static_assert(is_detected_v<set_model_name, B>,
                KEEL_DETAIL_BACKEND_LACKS("introspection", "call set_model_name(model_handle, std::string_view)"));
  static_assert(is_detected_exact_v<std::string, model_name, B>,
                KEEL_DETAIL_BACKEND_LACKS("introspection", "call model_name(model_handle) -> std::string"));
  static_assert(is_detected_v<add_destroy_callback, B> && is_detected_v<remove_destroy_callback, B>,
                KEEL_DETAIL_BACKEND_LACKS("introspection",
                                          "calls add_destroy_callback / remove_destroy_callback(model_handle, "
                                          "void (*)(void*), void*)"));
  static_assert(is_detected_v<abort_model, B>,
                KEEL_DETAIL_BACKEND_LACKS("introspection", "call abort_model(model_handle)"));
  static_assert(is_detected_exact_v<std::vector<model_stream>, model_streams, B>,
                KEEL_DETAIL_BACKEND_LACKS("introspection", "call model_streams(model_handle) -> std::vector<model_stream>"));
  static_assert(is_detected_exact_v<std::vector<task_info>, model_tasks, B>,
                KEEL_DETAIL_BACKEND_LACKS("introspection", "call model_tasks(model_handle) -> std::vector<task_info>"));
  static constexpr bool value = status<B>::value;
};
}  // namespace detail::introspection_layer

namespace detail {
// B, once its introspection layer is checked: a model's introspection call
// names the missing backend call; a backend without the layer still builds
// everything else.
template <class B>
struct introspected_backend {
  static_assert(introspection_layer::check<B>::value);
  using type = B;
};
template <class B>
using introspected = typename introspected_backend<B>::type;
}  // namespace detail
/// @endcond

/**
 * @brief The introspection layer: `model_id(m)` → std::uint64_t (stable,
 * unique per process), `set_model_name(m, std::string_view)`,
 * `model_name(m)` → std::string, `add_destroy_callback(m, fn, user)` /
 * `remove_destroy_callback(m, fn, user)`, `abort_model(m)`,
 * `model_streams(m)` → std::vector<model_stream>, `model_tasks(m)` →
 * std::vector<task_info> (per stream, in stream order).
 */
template <class B>
inline constexpr bool is_introspection_backend_v = detail::introspection_layer::status<B>::value;

KEEL_END_NAMESPACE  // namespace keel
