// SPDX-License-Identifier: Apache-2.0
// basic_stream (owning) and basic_stream_ref (non-owning): in-order queues of
// device work, with host callables, kernel launches and copies.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/core/unique_handle.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/backend/native.hpp"
#include "keel/runtime/stream_options.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {

template <class B>
struct stream_traits {
  using native_type = typename B::stream_handle;
  static constexpr native_type null() noexcept { return native_type{}; }
  static void close(native_type h) noexcept { B::destroy_stream(h); }
};

// A timeout as the backends take it: whole microseconds, rounded up, never
// negative (a zero timeout only polls).
template <class Rep, class Period>
std::chrono::microseconds to_wait_budget(std::chrono::duration<Rep, Period> timeout) {
  if (timeout <= timeout.zero()) return std::chrono::microseconds::zero();
  return std::chrono::ceil<std::chrono::microseconds>(timeout);
}

// Throws invalid_handle for a call on an empty handle; cold, out of line.
[[noreturn]] KEEL_COLD KEEL_DECL void throw_empty(const char* api);

// Throws null_parameter "null <what>" for a null native handle; cold, out of line.
[[noreturn]] KEEL_COLD KEEL_DECL void throw_null_native(const char* api, const char* what);

// Throws invalid_parameter "the <what> belongs to another device" for a
// native handle viewed or adopted through another device; cold, out of line.
[[noreturn]] KEEL_COLD KEEL_DECL void throw_of_other_device(const char* api, const char* what);

// Selects a handle's constructor from the backend's handle (keel's record),
// which only keel's own templates make.
struct from_handle_t {
  explicit from_handle_t() = default;
};
inline constexpr from_handle_t from_handle{};

// How keel's templates reach the backend handle inside a handle or view
// (private to users: theirs is native_handle(), the vendor's handle). Each
// handle befriends it; an owner reaches its ref base's handle through it.
struct handle_access {
  template <class R>
  static auto get(const R& r) noexcept {
    return r.handle_;
  }
  template <class R>
  static auto checked(const R& r, const char* api) {
    auto h = r.handle_;
    if (h == decltype(h){}) throw_empty(api);
    return h;
  }
  // An owner (or view) of backend handle h, made by keel's own templates.
  template <class Owner, class H>
  static Owner make(H h) noexcept {
    return Owner(h);
  }
};

// The backend handle of a handle or view, null when empty.
template <class R>
auto handle_of(const R& r) noexcept {
  return handle_access::get(r);
}
// The backend handle of a handle or view; @throws keel::error invalid_handle when empty.
template <class R>
auto checked_handle(const R& r, const char* api) {
  return handle_access::checked(r, api);
}

template <class B, class H, class = void>
struct has_device_of : std::false_type {};
template <class B, class H>
struct has_device_of<B, H, std::void_t<decltype(B::device_of(std::declval<H>()))>> : std::true_type {};

// A view made from a native handle, through a device: the backend's record
// of it, or it itself where the native handle is the backend's own, which
// must then be of that device. @throws keel::error null_parameter,
// invalid_parameter (and what the backend's from_native throws).
template <class B, class H, class Device, class... Extra>
H view_native(Device& dev, typename native_of<B, H>::type native, adoption how, const char* api, const char* what,
              Extra&&... extra) {
  if (native == typename native_of<B, H>::type{}) throw_null_native(api, what);
  H h = native_of<B, H>::from(dev, native, how, api, std::forward<Extra>(extra)...);
  if constexpr (std::is_same_v<typename native_of<B, H>::type, H> && has_device_of<B, H>::value) {
    if (&B::device_of(h) != &dev) throw_of_other_device(api, what);
  }
  return h;
}

// An owner's handle slot: replaces the handle, closing the old one through
// Traits (unless it is the new one). The owners' move, reset and destructor.
template <class Traits, class H>
void replace_owned(H& slot, H next) noexcept {
  H old = std::exchange(slot, next);
  if (!(old == H{}) && !(old == next)) Traits::close(old);
}

// A launched kernel with its arguments, as a backend receives it: callable
// as f(ctx); a backend that records the arguments for introspection
// describes `args` (keel::detail::describe_values, keel/runtime/model_tasks.hpp).
template <class Fn, class... Args>
struct bound_kernel {
  Fn fn;
  std::tuple<Args...> args;
  static constexpr std::size_t argument_count = sizeof...(Args);
  template <class Context>
  void operator()(Context& ctx) const {
    std::apply([&](const auto&... a) { fn(ctx, a...); }, args);
  }
};

// The operations a stream offers, shared by the owning handle and the view:
// Derived is the view, whose backend handle detail::handle_access reaches.
template <class Derived, class B>
class stream_ops {
  static_assert(stream_layer::check<B>::value);  // names the missing call of the stream layer

 public:
  using backend_type = B;
  using device_type = typename B::device_type;
  using launch_context = typename B::launch_context;

  /**
   * @brief Blocks until every task issued so far has finished.
   * @throws keel::error task_failed (with the task's message) when a task
   * failed, which also clears the stream's error state; capture_violation
   * when the stream is capturing and the capture mode refuses it.
   */
  void synchronize() const { B::synchronize(checked("keel::stream::synchronize")); }

  /**
   * @brief synchronize(), bounded: @throws keel::error timeout when the work
   * has not finished within @p timeout (the work goes on, nothing is lost,
   * the error state is kept for a later synchronize; the stream stays usable).
   */
  template <class Rep, class Period>
  void synchronize(std::chrono::duration<Rep, Period> timeout) const {
    B::synchronize_for(checked("keel::stream::synchronize"), detail::to_wait_budget(timeout));
  }

  /** @brief Whether all issued work has finished. @throws keel::error task_failed (state kept). */
  bool query() const { return B::query(checked("keel::stream::query")); }

  /**
   * @brief Issues a host callable: it runs on the stream after the work
   * issued before it. Captured while the stream captures. Never allowed into
   * a task group or an update (those take operator launches only).
   */
  template <class F>
  void launch_host(F&& f) const {
    static_assert(std::is_invocable_v<std::decay_t<F>&>, "launch_host: the callable takes no arguments");
    B::launch_host(checked("keel::stream::launch_host"), std::forward<F>(f));
  }

  /**
   * @brief Launches a kernel: `fn(ctx, args...)` runs on the stream with a
   * `launch_context& ctx` and the arguments as stored, by value, in the task.
   *
   * @p kind is the kernel's identity: a task-group update must launch the
   * same kinds, in the same order, and its arguments (a new alpha) replace
   * the old ones. The arguments live as long as the task, and as long as
   * every model that captured it: pass memory as memory_span (or anything
   * that shares ownership) to keep it alive.
   *
   * @code
   * stream.launch(keel::kernel_kind{"add"}, &add_kernel, out.span(), a.span(), b.span(), alpha);
   * @endcode
   */
  template <class Fn, class... Args>
  void launch(kernel_kind kind, Fn&& fn, Args&&... args) const {
    using fn_t = std::decay_t<Fn>;
    static_assert(std::is_invocable_v<const fn_t&, launch_context&, const std::decay_t<Args>&...>,
                  "keel::stream::launch: the kernel must be callable as fn(launch_context&, const Args&...), "
                  "with the arguments as the task stores them (decayed copies)");
    if constexpr (sizeof...(Args) == 0) {
      // A kernel object that carries its own arguments: no empty tuple
      // beside it, so it may use all of a backend's inline task storage.
      B::launch_kernel(checked("keel::stream::launch"), kind,
                       [fn = fn_t(std::forward<Fn>(fn))](launch_context& ctx) { fn(ctx); });
    } else {
      B::launch_kernel(checked("keel::stream::launch"), kind,
                       detail::bound_kernel<fn_t, std::decay_t<Args>...>{
                           fn_t(std::forward<Fn>(fn)),
                           std::tuple<std::decay_t<Args>...>(std::forward<Args>(args)...)});
    }
  }

  /** @brief Asynchronous copy of raw memory the caller keeps alive until it has run. */
  void copy_async(void* dst, const void* src, std::size_t bytes, copy_kind kind) const {
    B::copy_async(checked("keel::stream::copy_async"), dst, src, bytes, kind, nullptr, nullptr);
  }

  /**
   * @brief Asynchronous copy of src.bytes bytes between spans (host to
   * device, device to host, device to device); the spans' owners stay alive
   * until the copy ran (or, if captured, until the model is destroyed).
   * @throws keel::error invalid_parameter if dst is smaller than src.
   */
  void copy_async(const memory_span& dst, const memory_span& src) const {
    if (dst.bytes < src.bytes)
      ::keel::detail::throw_composed(
          errc::invalid_parameter, "keel::stream::copy_async",
          {"the destination (", dst.bytes, " bytes) is smaller than the source (", src.bytes, " bytes)"});
    B::copy_async(checked("keel::stream::copy_async"), dst.data, src.data, src.bytes,
                  copy_direction(dst.where, src.where), dst.owner, src.owner);
  }

  /**
   * @brief Sets the first @p bytes bytes of @p dst to @p value (converted to
   * unsigned char, as std::memset does) in stream order (aclrtMemsetAsync);
   * the span's owner stays alive until the memset ran (or, if captured,
   * until the model is destroyed). Captured as a memset task while the
   * stream captures; refused in a task group and an update, as a copy is.
   * Offered when the backend has memset_async.
   * @throws keel::error null_parameter if dst is null, invalid_parameter if
   * @p bytes exceeds dst.bytes; nothing is issued.
   */
  template <class SB = B>
  auto memset_async(const memory_span& dst, int value, std::size_t bytes) const
      -> decltype(SB::memset_async(std::declval<typename SB::stream_handle>(), nullptr, 0, std::size_t{}, nullptr)) {
    static constexpr const char* api = "keel::stream::memset_async";
    if (dst.data == nullptr) ::keel::throw_error(errc::null_parameter, api, "the destination is null");
    if (bytes > dst.bytes)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"the count (", bytes, " bytes) exceeds the destination (", dst.bytes, " bytes)"});
    SB::memset_async(checked(api), dst.data, value, bytes, dst.owner);
  }

  /** @brief memset_async(dst, value, dst.bytes): sets the whole span. */
  template <class SB = B>
  auto memset_async(const memory_span& dst, int value) const
      -> decltype(SB::memset_async(std::declval<typename SB::stream_handle>(), nullptr, 0, std::size_t{}, nullptr)) {
    return memset_async<SB>(dst, value, dst.bytes);
  }

  /**
   * @brief memset_async() on raw memory the caller keeps alive until it has
   * run. @throws keel::error null_parameter if dst is null.
   */
  template <class SB = B>
  auto memset_async(void* dst, int value, std::size_t bytes) const
      -> decltype(SB::memset_async(std::declval<typename SB::stream_handle>(), nullptr, 0, std::size_t{}, nullptr)) {
    static constexpr const char* api = "keel::stream::memset_async";
    if (dst == nullptr) ::keel::throw_error(errc::null_parameter, api, "the destination is null");
    SB::memset_async(checked(api), dst, value, bytes, nullptr);
  }

  /** @brief Blocking copy after the stream's earlier work. Unsafe during capture (per mode). */
  void copy(void* dst, const void* src, std::size_t bytes, copy_kind kind) const {
    B::copy(checked("keel::stream::copy"), dst, src, bytes, kind);
  }

  /**
   * @brief Later work waits until the event's last record (external: its signal).
   * Offered when the backend has the event layer (EB defers the check to the call).
   */
  template <class Event, class EB = B>
  auto wait(const Event& event) const
      -> decltype(EB::wait(std::declval<typename EB::stream_handle>(), handle_of(event))) {
    EB::wait(checked("keel::stream::wait"), checked_handle(event, "keel::stream::wait"));
  }

  /**
   * @brief wait() with an operation flag: event_operation::external waits,
   * inside the capture on this stream, on a record made outside the model
   * (a stream's record, or another model's external record); each execution
   * waits for the event's last record when the execution is issued.
   * So a plain record of the event made after the capture (one made before
   * it refuses the external wait, below) is waited for by the executions
   * issued after it, whatever captured when; and an execution issued while
   * the event was never recorded has nothing to wait for: its wait passes
   * at once. event_operation::default_ is wait(). Offered when the backend
   * has external operations.
   * @throws keel::error invalid_parameter (not a default event),
   * capture_violation (this stream is not capturing, or the same capture
   * records the event externally), invalid_state (a plain record recorded
   * the event before: CANN refuses it); the stream and its capture are unchanged.
   */
  template <class Event, class EB = B>
  auto wait(const Event& event, event_operation op) const
      -> decltype(EB::wait_external(std::declval<typename EB::stream_handle>(), handle_of(event))) {
    if (op == event_operation::default_) return wait(event);
    EB::wait_external(checked("keel::stream::wait"), checked_handle(event, "keel::stream::wait"));
  }

  /**
   * @brief wait(), bounded: if the event's last record (external: its
   * signal) has not come within @p timeout of the wait's turn on the stream,
   * the wait fails like a task that throws errc::timeout (the stream enters
   * its error state; synchronize() reports it). Not capturable.
   */
  template <class Event, class Rep, class Period, class EB = B>
  auto wait(const Event& event, std::chrono::duration<Rep, Period> timeout) const
      -> decltype(EB::wait_for(std::declval<typename EB::stream_handle>(), handle_of(event),
                               std::chrono::microseconds{})) {
    EB::wait_for(checked("keel::stream::wait"), checked_handle(event, "keel::stream::wait"),
                 detail::to_wait_budget(timeout));
  }

  /**
   * @brief Clears an external event's signal, in stream order (with the
   * event layer): CANN's aclrtResetEvent; event.clear_signal(stream) is the
   * same call. The event lives on (an owner's reset() would destroy it).
   */
  template <class Event, class EB = B>
  auto reset_event(const Event& event) const
      -> decltype(EB::reset(std::declval<typename EB::stream_handle>(), handle_of(event))) {
    EB::reset(checked("keel::stream::reset_event"), checked_handle(event, "keel::stream::reset_event"));
  }

  /** @brief Whether (and how) this stream is capturing: ask before a call that would break capture. */
  capture_info capture_status() const {
    return stream_capture_status<B>(checked("keel::stream::capture_status"));
  }
  /** @brief Shorthand for capture_status().capturing(). */
  bool is_capturing() const { return capture_status().capturing(); }

  /** @brief The device the stream belongs to. */
  device_type& device() const { return B::device_of(checked("keel::stream::device")); }
  /** @brief A number naming the stream in diagnostics. */
  std::uint64_t id() const { return B::id_of(checked("keel::stream::id")); }


  /** @brief The flags and priority the stream was made with (aclrtStreamGetFlags, aclrtStreamGetPriority). */
  template <class SB = B>
  auto options() const -> decltype(SB::options_of(std::declval<typename SB::stream_handle>())) {
    return SB::options_of(checked("keel::stream::options"));
  }
  /** @brief The flags the stream was made with (stream_flags::none for a plain stream). */
  template <class SB = B>
  auto flags() const -> decltype(SB::options_of(std::declval<typename SB::stream_handle>()).flags) {
    return SB::options_of(checked("keel::stream::flags")).flags;
  }
  /** @brief The stream's priority (lower runs first; 0 for a plain stream). */
  template <class SB = B>
  auto priority() const -> decltype(SB::options_of(std::declval<typename SB::stream_handle>()).priority) {
    return SB::options_of(checked("keel::stream::priority")).priority;
  }
  /** @brief The runtime's own id of the stream (aclrtStreamGetId; the host: id()). */
  template <class SB = B>
  auto runtime_id() const -> decltype(SB::runtime_id_of(std::declval<typename SB::stream_handle>())) {
    return SB::runtime_id_of(checked("keel::stream::runtime_id"));
  }

 private:
  typename B::stream_handle checked(const char* api) const {
    return checked_handle(static_cast<const Derived&>(*this), api);
  }
};

}  // namespace detail
/// @endcond

/**
 * @brief A non-owning view of a stream: of a keel stream (every basic_stream
 * is one, by derivation), or of a native stream made elsewhere (another
 * framework's current one), from its native handle.
 *
 * Ownership: none; the stream must outlive the view. Thread safety: work may
 * be issued from any thread; the view itself is a value. Exceptions: calls
 * throw keel::error; an empty view throws invalid_handle.
 */
template <KEEL_STREAM_BACKEND B>
class basic_stream_ref : public detail::stream_ops<basic_stream_ref<B>, B> {
  using native_of = detail::native_of<B, typename B::stream_handle>;

 public:
  /// The vendor's stream handle (aclrtStream on ACL; the backend's own handle where it has no vendor).
  using native_handle_type = typename native_of::type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  /** @brief An empty view. */
  constexpr basic_stream_ref() noexcept = default;

  /**
   * @brief Views @p native, a stream of @p dev made elsewhere (or a keel
   * stream's native_handle()); keel never destroys it. Every view of one
   * native stream is equal and shares one record of keel's books (see the
   * backend for the cost of finding it). @throws keel::error null_parameter;
   * invalid_parameter when the backend can tell it is not a stream of @p dev.
   */
  basic_stream_ref(device_type& dev, native_handle_type native)
      : handle_(view(dev, native, "keel::stream_ref")) {}
  basic_stream_ref(device_type&, std::nullptr_t) = delete;  ///< a null stream is no stream to view
  basic_stream_ref(device_type&, int) = delete;             ///< 0 is no stream to view

  /// The vendor's native handle (aclrtStream on ACL), null when empty.
  native_handle_type native_handle() const noexcept { return native_of::to(handle_); }
  /// Whether this holds a handle.
  constexpr explicit operator bool() const noexcept { return handle_ != typename B::stream_handle{}; }
  /// Whether both view the same stream (or both are empty).
  friend constexpr bool operator==(const basic_stream_ref& a, const basic_stream_ref& b) noexcept {
    return a.handle_ == b.handle_;
  }
  /// Whether they view different streams.
  friend constexpr bool operator!=(const basic_stream_ref& a, const basic_stream_ref& b) noexcept {
    return !(a == b);
  }

  /// @cond
  constexpr basic_stream_ref(detail::from_handle_t, typename B::stream_handle h) noexcept : handle_(h) {}
  /// @endcond

 protected:
  /// @cond
  static typename B::stream_handle view(device_type& dev, native_handle_type native, const char* api,
                                        adoption how = adoption::view) {
    return detail::view_native<B, typename B::stream_handle>(dev, native, how, api, "stream");
  }

  typename B::stream_handle handle_{};  // the backend's handle (its record of the stream); null when empty
  /// @endcond

 private:
  friend struct detail::handle_access;
};

/// @cond
namespace detail {
// Whether the backend can keep its record of a stream alive past the
// stream's destruction (retain_stream / release_stream, both noexcept).
template <class B, class = void>
struct has_stream_retain : std::false_type {};
template <class B>
struct has_stream_retain<B, std::void_t<decltype(B::retain_stream(std::declval<typename B::stream_handle>())),
                                        decltype(B::release_stream(std::declval<typename B::stream_handle>()))>>
    : std::true_type {};

// Reports that the scope @p api (a capture, group, update or body scope, a
// builder) was left by a normal return without end() or cancel(), and what
// its destructor did instead (@p outcome): keel's one rule for every scope,
// so that an early return is never a silent commit and never silently lost.
// The code is errc::invalid_state. A scope left by an exception
// (@p by_exception) is not reported: it cancelled all the same, and the
// exception already tells the caller (a runner that falls back to eager
// work after a failed capture writes no failure line). Scopes pass
// std::uncaught_exceptions() > 0 from their destructor rather than compare
// with a count taken at construction: that count costs a thread-local
// lookup per scope, a tenth of a per-task update; the price is that a scope
// left by a normal return inside a destructor that runs during unwinding is
// not reported either.
KEEL_COLD KEEL_DECL void report_scope_left_unfinished(const char* api, const char* outcome, bool by_exception) noexcept;

// What a scope holds of its stream: a view whose native record stays valid
// even if the stream is destroyed while the scope lives (the destruction
// ends the capture, group or update, and the scope's own end then finds
// nothing left to end), on backends that can retain the record; elsewhere a
// plain view, and the stream must outlive the scope.
template <class B>
class stream_anchor {
 public:
  explicit stream_anchor(basic_stream_ref<B> s) noexcept : s_(s) {
    if constexpr (has_stream_retain<B>::value)
      if (s_) B::retain_stream(handle_of(s_));
  }
  stream_anchor(const stream_anchor&) = delete;
  stream_anchor& operator=(const stream_anchor&) = delete;
  ~stream_anchor() {
    if constexpr (has_stream_retain<B>::value)
      if (s_) B::release_stream(handle_of(s_));
  }
  basic_stream_ref<B> get() const noexcept { return s_; }
  // The backend's handle (keel's record of the stream), not the vendor's.
  typename B::stream_handle native_handle() const noexcept { return handle_of(s_); }
  typename B::stream_handle checked(const char* api) const { return checked_handle(s_, api); }

 private:
  basic_stream_ref<B> s_;
};
}  // namespace detail
/// @endcond

/**
 * @brief An owning stream: in-order device work; destroying it waits for the
 * work issued to it (failures go to keel's error handler). It is a
 * basic_stream_ref too, so whatever takes a view takes the stream.
 *
 * Ownership: unique, like unique_ptr (release, reset, swap); a moved-from
 * stream is empty and every call on it throws invalid_handle. Never assign
 * to it through a reference to its basic_stream_ref base. Thread safety:
 * work may be issued from any thread; the handle itself is not
 * synchronised. Exceptions: calls throw keel::error; destructor noexcept.
 *
 * @code
 * keel::host::stream s{keel::host::default_device()};
 * s.launch_host([] { std::puts("runs on the stream"); });
 * s.synchronize();
 * @endcode
 */
template <KEEL_STREAM_BACKEND B>
class basic_stream : public basic_stream_ref<B> {
  using base = basic_stream_ref<B>;
  using traits = detail::stream_traits<B>;
  using native_of = detail::native_of<B, typename B::stream_handle>;

 public:
  /// The vendor's stream handle (see basic_stream_ref).
  using native_handle_type = typename base::native_handle_type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  /** @brief An empty stream. */
  basic_stream() noexcept = default;
  /** @brief Creates a stream on @p dev. */
  explicit basic_stream(device_type& dev) : base(detail::from_handle, B::create_stream(dev)) {}
  /**
   * @brief Creates a stream on @p dev with @p options (aclrtCreateStreamWithConfig),
   * on a backend with the stream-configuration layer.
   * @throws keel::error invalid_parameter for flag bits no flag has or a
   * priority outside the device's range; nothing is made.
   */
  template <class SB = B, class = decltype(SB::create_stream_with(std::declval<typename SB::device_type&>(),
                                                                  std::declval<const stream_options&>()))>
  basic_stream(device_type& dev, const stream_options& options)
      : base(detail::from_handle, SB::create_stream_with(dev, options)) {}
  /**
   * @brief Takes ownership of @p native, a stream of @p dev made elsewhere
   * (or one release() gave up): destroying the result destroys it.
   * @throws keel::error null_parameter; invalid_parameter when a keel stream
   * owns it already or it is not a stream of @p dev, where the backend can
   * tell (ACL's registry always can; a backend whose native handle is its
   * own handle, the host's, cannot tell a second owner).
   */
  static basic_stream from_native_handle(device_type& dev, native_handle_type native) {
    return basic_stream(base::view(dev, native, "keel::stream::from_native_handle", adoption::own));
  }
  static basic_stream from_native_handle(device_type&, std::nullptr_t) = delete;  ///< no stream to own
  static basic_stream from_native_handle(device_type&, int) = delete;             ///< no stream to own

  /// Takes the other object's handle; the other is left empty.
  basic_stream(basic_stream&& o) noexcept : base(detail::from_handle, std::exchange(o.handle_, {})) {}
  /// Destroys what this holds (waiting for its work), then takes the other object's handle; the other is left empty.
  basic_stream& operator=(basic_stream&& o) noexcept {
    detail::replace_owned<traits>(this->handle_, std::exchange(o.handle_, {}));
    return *this;
  }
  basic_stream(const basic_stream&) = delete;
  basic_stream& operator=(const basic_stream&) = delete;
  ~basic_stream() { reset(); }

  /**
   * @brief Gives up ownership: returns the native stream and leaves this
   * empty; the caller destroys it (or gives it back through
   * from_native_handle). Views of it stay valid while it lives.
   */
  [[nodiscard]] native_handle_type release() noexcept { return native_of::release(std::exchange(this->handle_, {})); }
  /** @brief Destroys the owned stream (waiting for its work); this is left empty. */
  void reset() noexcept { detail::replace_owned<traits>(this->handle_, typename B::stream_handle{}); }
  /// Exchanges what this and the other object hold.
  void swap(basic_stream& other) noexcept { std::swap(this->handle_, other.handle_); }
  friend void swap(basic_stream& a, basic_stream& b) noexcept { a.swap(b); }

  /**
   * @brief Destroys the stream without waiting for its work
   * (aclrtDestroyStreamForce): work not yet started is discarded, the task
   * running now finishes, event records still happen (no waiter hangs), and
   * a failure pending on the stream is dropped. A capture it began is
   * discarded and one it joined invalidated, as for reset(). Throws: nothing.
   */
  template <class SB = B>
  auto discard() noexcept -> decltype(SB::destroy_stream_force(std::declval<typename SB::stream_handle>())) {
    const auto h = std::exchange(this->handle_, typename B::stream_handle{});
    if (h != typename B::stream_handle{}) SB::destroy_stream_force(h);
  }

  /** @brief Synchronizes (throwing what it reports), then destroys the stream. */
  void close() {
    this->synchronize();
    reset();
  }

  /** @brief A non-owning view (the stream is one already: this copies it as a plain view). */
  basic_stream_ref<B> ref() const noexcept { return *this; }

 private:
  friend struct detail::handle_access;
  explicit basic_stream(typename B::stream_handle h) noexcept : base(detail::from_handle, h) {}
};

KEEL_END_NAMESPACE  // namespace keel

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/runtime/impl/stream.ipp"
#endif
