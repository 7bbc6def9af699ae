// SPDX-License-Identifier: Apache-2.0
// basic_model (a captured model instance) and its view, and
// basic_capture_scope, the RAII capture that yields one.
#pragma once

#include <cstddef>
#include <exception>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/core/unique_handle.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

namespace keel {

/// @cond
namespace detail {

template <class B>
struct model_traits {
  using native_type = typename B::model_handle;
  static constexpr native_type null() noexcept { return native_type{}; }
  static void close(native_type h) noexcept { B::destroy_model(h); }
};

template <class Derived, class B>
class model_ops {
  static_assert(capture_layer::check<B>::value);  // names the missing call of the capture layer

 public:
  /**
   * @brief Runs the recorded work on @p stream, after the stream's earlier
   * work, reading memory as it is when it runs. Asynchronous; any number of
   * times, on any stream.
   */
  void execute(basic_stream_ref<B> stream) const {
    B::execute(checked("keel::model::execute"), stream.checked("keel::model::execute"));
  }
  /** @brief Top-level recorded tasks (a task group counts as one). */
  std::size_t task_count() const { return B::task_count(checked("keel::model::task_count")); }
  /** @brief Task groups marked in the model. */
  std::size_t group_count() const { return B::group_count(checked("keel::model::group_count")); }

  typename B::model_handle checked(const char* api) const {
    auto h = static_cast<const Derived&>(*this).native_handle();
    if (h == typename B::model_handle{}) throw_empty(api);
    return h;
  }
};

}  // namespace detail
/// @endcond

/**
 * @brief A non-owning view of a model instance.
 *
 * Ownership: none; the model must outlive the view. Thread safety: execute
 * from any thread. Exceptions: calls throw keel::error.
 */
template <KEEL_CAPTURE_BACKEND B>
class basic_model_ref : public detail::model_ops<basic_model_ref<B>, B> {
 public:
  /// The backend's native handle type.
  using native_handle_type = typename B::model_handle;
  constexpr basic_model_ref() noexcept = default;
  /// A view of @p native, made elsewhere; keel never destroys it. @throws keel::error null_parameter for a null handle.
  static basic_model_ref adopt(native_handle_type native) {
    if (native == native_handle_type{}) throw_error(errc::null_parameter, "keel::model_ref::adopt", "null model");
    return basic_model_ref(native);
  }
  /// The native handle, null when empty.
  constexpr native_handle_type native_handle() const noexcept { return native_; }
  /// Whether this holds a handle.
  constexpr explicit operator bool() const noexcept { return native_ != native_handle_type{}; }

 private:
  template <KEEL_CAPTURE_BACKEND>
  friend class basic_model;
  constexpr explicit basic_model_ref(native_handle_type native) noexcept : native_(native) {}
  native_handle_type native_{};
};

/**
 * @brief An owning model instance: work captured once, executed many times.
 * Destroying it while executions are in flight is safe (they keep it alive)
 * and frees one of the device's live-model slots; what its work uses
 * (buffers, events, arguments) lives until then.
 *
 * Ownership: unique (get, release, reset, swap). Thread safety: execute from
 * any thread; the handle is not synchronised. Exceptions: calls throw
 * keel::error; the destructor is noexcept.
 */
template <KEEL_CAPTURE_BACKEND B>
class basic_model : public detail::model_ops<basic_model<B>, B> {
  using handle_type = unique_handle<detail::model_traits<B>>;

 public:
  /// The backend's native handle type.
  using native_handle_type = typename B::model_handle;
  basic_model() noexcept = default;
  /// Takes ownership of @p native, made elsewhere. @throws keel::error null_parameter for a null handle.
  static basic_model adopt(native_handle_type native) {
    if (native == native_handle_type{}) throw_error(errc::null_parameter, "keel::model::adopt", "null model");
    basic_model m;
    m.handle_.reset(native);
    return m;
  }
  /// Takes the other object's handle; the other is left empty.
  basic_model(basic_model&&) noexcept = default;
  /// Releases what this holds, then takes the other object's handle; the other is left empty.
  basic_model& operator=(basic_model&&) noexcept = default;

  /// The native handle, null when empty.
  native_handle_type native_handle() const noexcept { return handle_.get(); }
  /// The native handle, null when empty.
  native_handle_type get() const noexcept { return handle_.get(); }
  /// Gives up ownership: returns the handle and leaves this empty; the caller destroys it.
  native_handle_type release() noexcept { return handle_.release(); }
  /// Destroys the handle held (if any) and takes ownership of @p native instead.
  void reset(native_handle_type native = native_handle_type{}) noexcept { handle_.reset(native); }
  /// Whether this holds a handle.
  explicit operator bool() const noexcept { return static_cast<bool>(handle_); }
  /// Exchanges what this and the other object hold.
  void swap(basic_model& other) noexcept { handle_.swap(other.handle_); }
  friend void swap(basic_model& a, basic_model& b) noexcept { a.swap(b); }
  /// A non-owning view of the same handle.
  basic_model_ref<B> ref() const noexcept { return basic_model_ref<B>(handle_.get()); }
  /// Converts to a non-owning view of the same handle.
  operator basic_model_ref<B>() const noexcept { return ref(); }

 private:
  handle_type handle_;
};

/**
 * @brief Captures the work issued to a stream (and to streams that fork
 * from it through events) into a model, from construction to end().
 *
 * Ownership: holds the capture; neither copyable nor movable. If the scope is
 * left without end() (an exception, an early return) the capture is ended
 * and the partial model discarded. Thread safety: one scope per stream.
 * Exceptions: the constructor throws capture_violation (already capturing)
 * or resource_limit (live models); end() throws capture_violation (open
 * group, unjoined fork) and leaves the capture running, to be fixed or
 * discarded.
 *
 * @code
 * keel::host::capture_scope capture{stream, keel::capture_mode::thread_local_};
 * stream.launch(kind, kernel, args...);   // recorded, not run
 * keel::host::model model = capture.end();
 * model.execute(stream); model.execute(stream);
 * @endcode
 */
template <KEEL_CAPTURE_BACKEND B>
class [[nodiscard]] basic_capture_scope {
  static_assert(detail::capture_layer::check<B>::value);  // names the missing call of the capture layer

 public:
  /// Begins a capture on @p stream in @p mode. @throws keel::error capture_violation when the stream cannot begin one.
  explicit basic_capture_scope(basic_stream_ref<B> stream, capture_mode mode = capture_mode::global)
      : stream_(stream) {
    B::capture_begin(stream_.checked("keel::capture_scope"), mode);
  }
  basic_capture_scope(const basic_capture_scope&) = delete;
  basic_capture_scope& operator=(const basic_capture_scope&) = delete;
  ~basic_capture_scope() {
    if (active_) B::capture_discard(stream_.native_handle());
  }

  /** @brief Ends the capture and returns the model. */
  basic_model<B> end() {
    if (!active_) throw_error(errc::invalid_state, "keel::capture_scope::end", "the capture already ended");
    auto model = basic_model<B>::adopt(B::capture_end(stream_.native_handle()));
    active_ = false;
    return model;
  }
  /** @brief Ends the capture and throws the partial model away. Throws: nothing. */
  void discard() noexcept {
    if (active_) B::capture_discard(stream_.native_handle());
    active_ = false;
  }
  /// Whether the capture is still in progress (end() not called, no exception).
  bool active() const noexcept { return active_; }
  /// The stream the capture began on.
  basic_stream_ref<B> stream() const noexcept { return stream_.get(); }

 private:
  detail::stream_anchor<B> stream_;
  bool active_ = true;
};

}  // namespace keel
