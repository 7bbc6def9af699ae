// SPDX-License-Identifier: Apache-2.0
// The backend requirement: the native types and calls a runtime backend
// supplies to the handle templates (a concept in C++20, a trait in C++17).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "keel/runtime/types.hpp"

namespace keel {

/**
 * @brief What a backend `B` supplies. Every call is a static member; native
 * handles are trivially copyable and value-initialise to "no handle".
 *
 * Types: `device_type`, `stream_handle`, `event_handle`, `model_handle`,
 * `group_handle`, `buffer_handle`, `launch_context` (what a kernel body
 * receives when it runs).
 *
 * Streams: `create_stream(device_type&)`, `destroy_stream(h) noexcept`,
 * `device_of(h)`, `id_of(h)`, `synchronize(h)`, `query(h)`,
 * `launch_host(h, F)`, `launch_kernel(h, kernel_kind, F)` with
 * `F(launch_context&)`, `copy_async(h, dst, src, bytes, copy_kind, keep_dst,
 * keep_src)`, `copy(h, dst, src, bytes, copy_kind)`, `capture_status(h)`,
 * `thread_capture_status(device_type&)`, `synchronize_device(device_type&)`.
 *
 * Events: `create_event(device_type&, event_flags)`, `destroy_event(e)
 * noexcept`, `flags_of(e)`, `record(e, h)`, `wait(h, e)`, `reset(h, e)`,
 * `query(e)`, `synchronize(e)`, `elapsed_ms(e, e)`.
 *
 * Capture and models: `capture_begin(h, capture_mode)`, `capture_end(h)` →
 * model, `capture_discard(h) noexcept`, `destroy_model(m) noexcept`,
 * `execute(m, h)`, `task_count(m)`, `group_count(m)`.
 *
 * Task groups: `group_begin(h)`, `group_end(h)` → group, `group_abort(h)
 * noexcept`, `destroy_group(g) noexcept`, `group_size(g)`,
 * `group_model_alive(g)`, `update_begin(h, g)`, `update_end(h)`,
 * `update_abort(h) noexcept`.
 *
 * Memory: `allocate(h, bytes, memory_kind)` (release ordered on stream h),
 * `free_async(b) noexcept`, `data(b)`, `size(b)`, `keep_alive(b)` →
 * `std::shared_ptr<void>` sharing the allocation.
 *
 * Every call that can fail throws keel::error and changes nothing.
 */
template <class B, class = void>
struct is_runtime_backend : std::false_type {};

/// @cond
namespace detail {
struct probe_kernel {
  template <class Context>
  void operator()(Context&) const {}
};
struct probe_host {
  void operator()() const {}
};
template <class B>
using backend_expressions = std::void_t<
    typename B::device_type, typename B::stream_handle, typename B::event_handle, typename B::model_handle,
    typename B::group_handle, typename B::buffer_handle, typename B::launch_context,
    decltype(B::create_stream(std::declval<typename B::device_type&>())),
    decltype(B::destroy_stream(std::declval<typename B::stream_handle>())),
    decltype(B::device_of(std::declval<typename B::stream_handle>())),
    decltype(B::id_of(std::declval<typename B::stream_handle>())),
    decltype(B::synchronize(std::declval<typename B::stream_handle>())),
    decltype(B::query(std::declval<typename B::stream_handle>())),
    decltype(B::launch_host(std::declval<typename B::stream_handle>(), probe_host{})),
    decltype(B::launch_kernel(std::declval<typename B::stream_handle>(), kernel_kind{""}, probe_kernel{})),
    decltype(B::copy_async(std::declval<typename B::stream_handle>(), std::declval<void*>(),
                           std::declval<const void*>(), std::size_t{}, copy_kind{}, std::shared_ptr<void>{},
                           std::shared_ptr<void>{})),
    decltype(B::copy(std::declval<typename B::stream_handle>(), std::declval<void*>(), std::declval<const void*>(),
                     std::size_t{}, copy_kind{})),
    decltype(B::capture_status(std::declval<typename B::stream_handle>())),
    decltype(B::thread_capture_status(std::declval<typename B::device_type&>())),
    decltype(B::synchronize_device(std::declval<typename B::device_type&>())),
    decltype(B::create_event(std::declval<typename B::device_type&>(), event_flags{})),
    decltype(B::destroy_event(std::declval<typename B::event_handle>())),
    decltype(B::flags_of(std::declval<typename B::event_handle>())),
    decltype(B::record(std::declval<typename B::event_handle>(), std::declval<typename B::stream_handle>())),
    decltype(B::wait(std::declval<typename B::stream_handle>(), std::declval<typename B::event_handle>())),
    decltype(B::reset(std::declval<typename B::stream_handle>(), std::declval<typename B::event_handle>())),
    decltype(B::query(std::declval<typename B::event_handle>())),
    decltype(B::synchronize(std::declval<typename B::event_handle>())),
    decltype(B::elapsed_ms(std::declval<typename B::event_handle>(), std::declval<typename B::event_handle>())),
    decltype(B::capture_begin(std::declval<typename B::stream_handle>(), capture_mode{})),
    decltype(B::capture_end(std::declval<typename B::stream_handle>())),
    decltype(B::capture_discard(std::declval<typename B::stream_handle>())),
    decltype(B::destroy_model(std::declval<typename B::model_handle>())),
    decltype(B::execute(std::declval<typename B::model_handle>(), std::declval<typename B::stream_handle>())),
    decltype(B::task_count(std::declval<typename B::model_handle>())),
    decltype(B::group_count(std::declval<typename B::model_handle>())),
    decltype(B::group_begin(std::declval<typename B::stream_handle>())),
    decltype(B::group_end(std::declval<typename B::stream_handle>())),
    decltype(B::group_abort(std::declval<typename B::stream_handle>())),
    decltype(B::destroy_group(std::declval<typename B::group_handle>())),
    decltype(B::group_size(std::declval<typename B::group_handle>())),
    decltype(B::group_model_alive(std::declval<typename B::group_handle>())),
    decltype(B::update_begin(std::declval<typename B::stream_handle>(), std::declval<typename B::group_handle>())),
    decltype(B::update_end(std::declval<typename B::stream_handle>())),
    decltype(B::update_abort(std::declval<typename B::stream_handle>())),
    decltype(B::allocate(std::declval<typename B::stream_handle>(), std::size_t{}, memory_kind{})),
    decltype(B::free_async(std::declval<typename B::buffer_handle>())),
    decltype(B::data(std::declval<typename B::buffer_handle>())),
    decltype(B::size(std::declval<typename B::buffer_handle>())),
    decltype(B::keep_alive(std::declval<typename B::buffer_handle>()))>;

template <class B>
constexpr bool backend_guarantees() {
  using s = typename B::stream_handle;
  using e = typename B::event_handle;
  using m = typename B::model_handle;
  using g = typename B::group_handle;
  using b = typename B::buffer_handle;
  return std::is_trivially_copyable_v<s> && std::is_trivially_copyable_v<e> && std::is_trivially_copyable_v<m> &&
         std::is_trivially_copyable_v<g> && std::is_trivially_copyable_v<b> &&
         noexcept(B::destroy_stream(std::declval<s>())) && noexcept(B::destroy_event(std::declval<e>())) &&
         noexcept(B::destroy_model(std::declval<m>())) && noexcept(B::destroy_group(std::declval<g>())) &&
         noexcept(B::free_async(std::declval<b>())) && noexcept(B::capture_discard(std::declval<s>())) &&
         noexcept(B::group_abort(std::declval<s>())) && noexcept(B::update_abort(std::declval<s>())) &&
         std::is_same_v<decltype(B::capture_status(std::declval<s>())), capture_info> &&
         std::is_same_v<decltype(B::capture_end(std::declval<s>())), m> &&
         std::is_same_v<decltype(B::group_end(std::declval<s>())), g>;
}
}  // namespace detail
/// @endcond

template <class B>
struct is_runtime_backend<B, detail::backend_expressions<B>> : std::bool_constant<detail::backend_guarantees<B>()> {};

template <class B>
inline constexpr bool is_runtime_backend_v = is_runtime_backend<B>::value;

#if defined(__cpp_concepts) && __cpp_concepts >= 201907L
/** @brief The backend requirement as a C++20 concept (see is_runtime_backend). */
template <class B>
concept runtime_backend = is_runtime_backend_v<B>;
#define KEEL_RUNTIME_BACKEND ::keel::runtime_backend
#else
#define KEEL_RUNTIME_BACKEND class
#endif

/// @cond
namespace detail {
template <class B>
struct check_backend {
  static_assert(is_runtime_backend_v<B>,
                "keel: B is not a runtime backend: it lacks one of the types or static calls listed at "
                "keel::is_runtime_backend, a native handle is not trivially copyable, or a destroy/abort call is "
                "not noexcept");
  static constexpr bool value = true;
};
}  // namespace detail
/// @endcond

}  // namespace keel
