// SPDX-License-Identifier: Apache-2.0
// A user-written keel backend that decorates another: every native call of
// keel's requirement is forwarded to the wrapped backend and logged, with its
// arguments and its result (or what it threw), to a sink the program sets.
// The native handles are the wrapped backend's, so handles made through the
// decorator are the wrapped backend's handles; optional behaviour (the
// queries of keel/runtime/backend/queries.hpp) is forwarded too.
// docs/backends.md walks through it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include "keel/runtime/backend.hpp"
#include "keel/runtime/runtime.hpp"
#include "keel/runtime/types.hpp"

namespace tracing {

/** @brief Receives one line per native call; called from any thread, it must not throw. */
using sink = void (*)(const std::string& line) noexcept;

/// @cond
namespace detail {
inline std::atomic<sink>& sink_slot() noexcept {
  static std::atomic<sink> slot{nullptr};
  return slot;
}
}  // namespace detail
/// @endcond

/** @brief Sets where trace lines go (nullptr: nowhere) and returns the previous sink. Throws: nothing. */
inline sink set_sink(sink s) noexcept { return detail::sink_slot().exchange(s); }

/**
 * @brief The tracing decorator over a runtime backend Native (keel's host
 * backend in the examples): the same types, every call traced.
 *
 * Ownership: the native handles are Native's, owned by keel's handles.
 * Thread safety: as Native; the sink is called from the calling thread.
 * Exceptions: as Native (a call that throws is traced with what it threw,
 * then rethrown); tracing itself never throws out of a noexcept call.
 */
template <class Native>
struct backend {
  static_assert(keel::is_runtime_backend_v<Native>, "tracing::backend decorates a backend with every layer");

  using native_backend = Native;
  using device_type = typename Native::device_type;
  using stream_handle = typename Native::stream_handle;
  using event_handle = typename Native::event_handle;
  using model_handle = typename Native::model_handle;
  using group_handle = typename Native::group_handle;
  using buffer_handle = typename Native::buffer_handle;
  using launch_context = typename Native::launch_context;

  static constexpr bool abandon_restores_group = keel::abandon_restores_group_v<Native>;

  // ---- streams ---------------------------------------------------------------
  static stream_handle create_stream(device_type& dev) {
    return traced("create_stream", [&] { return Native::create_stream(dev); }, &dev);
  }
  static void destroy_stream(stream_handle s) noexcept {
    trace_quietly("destroy_stream", stream_arg{s});
    Native::destroy_stream(s);
  }
  static device_type& device_of(stream_handle s) noexcept { return Native::device_of(s); }  // a getter: not traced
  static std::uint64_t id_of(stream_handle s) noexcept { return Native::id_of(s); }        // a getter: not traced
  static void synchronize(stream_handle s) {
    traced("synchronize", [&] { Native::synchronize(s); }, stream_arg{s});
  }
  static bool query(stream_handle s) {
    return traced("query", [&] { return Native::query(s); }, stream_arg{s});
  }
  static void synchronize_device(device_type& dev) {
    traced("synchronize_device", [&] { Native::synchronize_device(dev); }, &dev);
  }
  template <class F>
  static void launch_host(stream_handle s, F&& f) {
    traced("launch_host", [&] { Native::launch_host(s, std::forward<F>(f)); }, stream_arg{s}, callable_arg{});
  }
  template <class F>
  static void launch_kernel(stream_handle s, keel::kernel_kind kind, F&& f) {
    traced("launch_kernel", [&] { Native::launch_kernel(s, kind, std::forward<F>(f)); }, stream_arg{s}, kind,
           callable_arg{});
  }
  static void copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, keel::copy_kind kind,
                         std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    const bool owns_dst = keep_dst != nullptr, owns_src = keep_src != nullptr;
    traced("copy_async",
           [&] { Native::copy_async(s, dst, src, bytes, kind, std::move(keep_dst), std::move(keep_src)); },
           stream_arg{s}, dst, src, bytes, kind, owner_arg{owns_dst}, owner_arg{owns_src});
  }
  static void copy(stream_handle s, void* dst, const void* src, std::size_t bytes, keel::copy_kind kind) {
    traced("copy", [&] { Native::copy(s, dst, src, bytes, kind); }, stream_arg{s}, dst, src, bytes, kind);
  }

  // ---- events ----------------------------------------------------------------
  static event_handle create_event(device_type& dev, keel::event_flags flags) {
    return traced("create_event", [&] { return Native::create_event(dev, flags); }, &dev, flags);
  }
  static void destroy_event(event_handle e) noexcept {
    trace_quietly("destroy_event", event_arg{e});
    Native::destroy_event(e);
  }
  static keel::event_flags flags_of(event_handle e) noexcept { return Native::flags_of(e); }  // a getter
  static void record(event_handle e, stream_handle s) {
    traced("record", [&] { Native::record(e, s); }, event_arg{e}, stream_arg{s});
  }
  static void wait(stream_handle s, event_handle e) {
    traced("wait", [&] { Native::wait(s, e); }, stream_arg{s}, event_arg{e});
  }
  static void reset(stream_handle s, event_handle e) {
    traced("reset", [&] { Native::reset(s, e); }, stream_arg{s}, event_arg{e});
  }
  static bool query(event_handle e) {
    return traced("query", [&] { return Native::query(e); }, event_arg{e});
  }
  static void synchronize(event_handle e) {
    traced("synchronize", [&] { Native::synchronize(e); }, event_arg{e});
  }
  static float elapsed_ms(event_handle start, event_handle end) {
    return traced("elapsed_ms", [&] { return Native::elapsed_ms(start, end); }, event_arg{start}, event_arg{end});
  }

  // ---- memory ----------------------------------------------------------------
  static buffer_handle allocate(stream_handle s, std::size_t bytes, keel::memory_kind kind) {
    return traced("allocate", [&] { return Native::allocate(s, bytes, kind); }, stream_arg{s}, bytes, kind);
  }
  static void free_async(buffer_handle b) noexcept {
    trace_quietly("free_async", buffer_arg{b});
    Native::free_async(b);
  }
  static void* data(buffer_handle b) noexcept { return Native::data(b); }        // a getter
  static std::size_t size(buffer_handle b) noexcept { return Native::size(b); }  // a getter
  static std::shared_ptr<void> keep_alive(buffer_handle b) {
    return traced("keep_alive", [&] { return Native::keep_alive(b); }, buffer_arg{b});
  }

  // ---- capture and models ----------------------------------------------------
  static keel::capture_info capture_status(stream_handle s) { return Native::capture_status(s); }  // a query
  static keel::capture_info thread_capture_status(device_type& dev) { return Native::thread_capture_status(dev); }
  static void capture_begin(stream_handle s, keel::capture_mode mode) {
    traced("capture_begin", [&] { Native::capture_begin(s, mode); }, stream_arg{s}, mode);
  }
  static model_handle capture_end(stream_handle s) {
    return traced("capture_end", [&] { return Native::capture_end(s); }, stream_arg{s});
  }
  static void capture_discard(stream_handle s) noexcept {
    trace_quietly("capture_discard", stream_arg{s});
    Native::capture_discard(s);
  }
  static void destroy_model(model_handle m) noexcept {
    trace_quietly("destroy_model", model_arg{m});
    Native::destroy_model(m);
  }
  static void execute(model_handle m, stream_handle s) {
    traced("execute", [&] { Native::execute(m, s); }, model_arg{m}, stream_arg{s});
  }
  static std::size_t task_count(model_handle m) { return Native::task_count(m); }    // a getter
  static std::size_t group_count(model_handle m) { return Native::group_count(m); }  // a getter

  // ---- task groups and updates -----------------------------------------------
  static void group_begin(stream_handle s) {
    traced("group_begin", [&] { Native::group_begin(s); }, stream_arg{s});
  }
  static group_handle group_end(stream_handle s) {
    return traced("group_end", [&] { return Native::group_end(s); }, stream_arg{s});
  }
  static void group_abort(stream_handle s) noexcept {
    trace_quietly("group_abort", stream_arg{s});
    Native::group_abort(s);
  }
  static void destroy_group(group_handle g) noexcept {
    trace_quietly("destroy_group", group_arg{g});
    Native::destroy_group(g);
  }
  static std::size_t group_size(group_handle g) { return Native::group_size(g); }        // a getter
  static bool group_model_alive(group_handle g) { return Native::group_model_alive(g); }  // a getter
  static void update_begin(stream_handle s, group_handle g) {
    traced("update_begin", [&] { Native::update_begin(s, g); }, stream_arg{s}, group_arg{g});
  }
  static void update_end(stream_handle s) {
    traced("update_end", [&] { Native::update_end(s); }, stream_arg{s});
  }
  static void update_abort(stream_handle s) noexcept {
    trace_quietly("update_abort", stream_arg{s});
    Native::update_abort(s);
  }

 private:
  // How arguments read in a trace line: streams by their id, other handles
  // and memory by address, enumerations by name.
  struct stream_arg {
    stream_handle h;
  };
  template <char Kind, class Handle>
  struct handle_arg {
    Handle value;
  };
  using event_arg = handle_arg<'e', event_handle>;
  using model_arg = handle_arg<'m', model_handle>;
  using group_arg = handle_arg<'g', group_handle>;
  using buffer_arg = handle_arg<'b', buffer_handle>;
  struct callable_arg {};
  struct owner_arg {
    bool shares;
  };
  static void put(std::ostream& os, stream_arg s) { os << "stream #" << Native::id_of(s.h); }
  template <char Kind, class Handle>
  static void put(std::ostream& os, handle_arg<Kind, Handle> h) {
    os << (Kind == 'e' ? "event@" : Kind == 'm' ? "model@" : Kind == 'g' ? "group@" : "buffer@");
    put(os, h.value);
  }
  static void put(std::ostream& os, callable_arg) { os << "<callable>"; }
  static void put(std::ostream& os, owner_arg o) { os << (o.shares ? "<owner>" : "<none>"); }
  static void put(std::ostream& os, device_type* dev) { os << "device@" << static_cast<const void*>(dev); }
  static void put(std::ostream& os, keel::kernel_kind k) { os << "kernel '" << k.name() << "'"; }
  static void put(std::ostream& os, keel::capture_mode m) { os << keel::to_string(m); }
  static void put(std::ostream& os, keel::event_flags f) {
    os << (f == keel::event_flags::timing ? "timing" : f == keel::event_flags::external ? "external" : "default");
  }
  static void put(std::ostream& os, keel::copy_kind k) {
    static const char* const names[] = {"host_to_host", "host_to_device", "device_to_host", "device_to_device"};
    os << names[static_cast<int>(k)];
  }
  static void put(std::ostream& os, keel::memory_kind k) {
    static const char* const names[] = {"device", "pinned_host", "pageable_host"};
    os << names[static_cast<int>(k)];
  }
  static void put(std::ostream& os, bool b) { os << (b ? "true" : "false"); }
  static void put(std::ostream& os, const std::shared_ptr<void>& p) { put(os, owner_arg{p != nullptr}); }
  template <class T>
  static void put(std::ostream& os, const T& value) {
    if constexpr (std::is_pointer_v<T>)
      os << static_cast<const void*>(value);
    else
      os << value;
  }

  template <class... Args>
  static std::string line(const char* call, const Args&... args) {
    std::ostringstream os;
    os << call << '(';
    const char* separator = "";
    ((os << separator, put(os, args), separator = ", "), ...);
    os << ')';
    return os.str();
  }
  static void emit(const std::string& text) noexcept {
    if (sink s = detail::sink_slot().load(std::memory_order_acquire)) s(text);
  }

  // Formats the call before it runs (a destroy ends the handle's life), then
  // emits it with its result, or with what it threw.
  template <class Call, class... Args>
  static auto traced(const char* name, Call&& call, const Args&... args) -> decltype(call()) {
    using result = decltype(call());
    const bool on = detail::sink_slot().load(std::memory_order_acquire) != nullptr;
    const std::string text = on ? line(name, args...) : std::string();
    try {
      if constexpr (std::is_void_v<result>) {
        call();
        if (on) emit(text);
      } else {
        result r = call();
        if (on) {
          std::ostringstream os;
          os << text << " -> ";
          if constexpr (std::is_same_v<result, stream_handle>)
            put(os, stream_arg{r});
          else if constexpr (std::is_same_v<result, event_handle>)
            put(os, event_arg{r});
          else if constexpr (std::is_same_v<result, model_handle>)
            put(os, model_arg{r});
          else if constexpr (std::is_same_v<result, group_handle>)
            put(os, group_arg{r});
          else if constexpr (std::is_same_v<result, buffer_handle>)
            put(os, buffer_arg{r});
          else
            put(os, r);
          emit(os.str());
        }
        return r;
      }
    } catch (const std::exception& e) {
      if (on) emit(text + " threw: " + e.what());
      throw;
    }
  }
  // For noexcept calls: a trace that cannot be formatted is dropped.
  template <class... Args>
  static void trace_quietly(const char* name, const Args&... args) noexcept {
    if (detail::sink_slot().load(std::memory_order_acquire) == nullptr) return;
    try {
      emit(line(name, args...));
    } catch (...) {
    }
  }
};

}  // namespace tracing
