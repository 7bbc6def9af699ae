// SPDX-License-Identifier: Apache-2.0
// The checked layer's rules for a model's identity, lifetime and
// introspection: a name is at most 512 bytes with no NUL (what CANN's
// aclmdlRIGetName can return whole), a destroy callback is a non-null
// function registered once per model (CANN unregisters by function), and an
// unregistration names a registered callback. The native backend stores the
// name and the callbacks, aborts executions and lists the model's tasks.
// Included by checked/backend.hpp.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "keel/core/utf8.hpp"
#include "keel/runtime/checked/backend.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace checked {

/// @cond KEEL_BACKEND_OPERATIONS
namespace detail {
template <class N>
using capture_model_id_call = decltype(N::capture_model_id(std::declval<typename N::stream_handle>()));

// Registrations of one backend's destroy callbacks are checked and made
// under one lock: two threads registering the same function on one model
// cannot both pass the "registered once" check.
template <class N>
std::mutex& destroy_callback_lock() noexcept {
  static std::mutex m;
  return m;
}
}  // namespace detail

inline constexpr std::size_t max_model_name_bytes = 512;  // aclmdlRIGetName's limit

template <class Native>
void backend<Native>::adopt_native_capture_id(capture_t& c, stream_handle s) noexcept {
  if constexpr (keel::detail::is_detected_v<detail::capture_model_id_call, N>) {
    const std::uint64_t id = N::capture_model_id(s);
    if (id != 0) c.id = id;
  } else {
    (void)c;
    (void)s;
  }
}

template <class Native>
void backend<Native>::set_model_name(model_handle m, std::string_view name) {
  static constexpr const char* api = "keel::model::set_name";
  if (name.size() > max_model_name_bytes)
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"a model's name is at most ", max_model_name_bytes, " bytes; this one has ",
                                    name.size(), " (the model keeps its name)"});
  if (name.find('\0') != std::string_view::npos)
    throw_error(errc::invalid_parameter, api, "a model's name has no NUL byte (the model keeps its name)");
  // The name goes to the runtime, into dumps and JSON as text: bytes that are
  // not UTF-8 (a name cut in the middle of a character) would make them invalid.
  if (const std::size_t bad = ::keel::detail::utf8_invalid_at(name); bad != std::string_view::npos)
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"a model's name is valid UTF-8; byte ", bad,
                                    " begins no whole character (the model keeps its name)"});
  N::set_model_name(m, name);
}

template <class Native>
std::string backend<Native>::model_name(model_handle m) {
  return N::model_name(m);
}

template <class Native>
void backend<Native>::add_destroy_callback(model_handle m, void (*fn)(void*), void* user) {
  static constexpr const char* api = "keel::model::on_destroy";
  if (fn == nullptr) throw_error(errc::null_parameter, api, "the destroy callback is null");
  std::lock_guard<std::mutex> lock(detail::destroy_callback_lock<N>());
  if (N::has_destroy_callback(m, fn))
    ::keel::detail::throw_composed(
        errc::invalid_parameter, api,
        {"a destroy callback is registered once per model (the runtime unregisters it by its function); "
         "model #",
         model_id(m), " already has this one"});
  N::add_destroy_callback(m, fn, user);
}

template <class Native>
void backend<Native>::remove_destroy_callback(model_handle m, void (*fn)(void*), void* user) {
  static constexpr const char* api = "keel::model::remove_destroy_callback";
  std::lock_guard<std::mutex> lock(detail::destroy_callback_lock<N>());
  if (fn == nullptr || !N::has_destroy_callback(m, fn))
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"the callback is not registered on model #", model_id(m)});
  N::remove_destroy_callback(m, fn, user);
}

template <class Native>
void backend<Native>::abort_model(model_handle m) {
  N::abort_model(m);
}

template <class Native>
std::vector<model_stream> backend<Native>::model_streams(model_handle m) {
  return N::model_streams(m);
}

template <class Native>
std::vector<task_info> backend<Native>::model_tasks(model_handle m) {
  return N::model_tasks(m);
}

// The task is named by its stream and sequence id, as model_tasks lists it.
template <class Native>
kernel_attributes backend<Native>::kernel_task_attributes(model_handle m, const task_info& task) {
  static constexpr const char* api = "keel::model::kernel_attributes";
  const std::vector<task_info> tasks = N::model_tasks(m);
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i].stream != task.stream || tasks[i].sequence != task.sequence) continue;
    if (tasks[i].type != task_type::kernel)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"task (stream ", task.stream, ", sequence ", task.sequence, ") of model #",
                                      model_id(m), " is a ", to_string(tasks[i].type),
                                      " task: only kernel tasks have launch attributes"});
    return N::kernel_task_attributes(m, i);
  }
  ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                 {"model #", model_id(m), " has no task at stream ", task.stream, ", sequence ",
                                  task.sequence, " (name tasks as model.tasks() lists them)"});
}
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::checked
