// SPDX-License-Identifier: Apache-2.0
// basic_model (a captured model instance) and its view, and
// basic_capture_scope, the RAII capture that yields one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/unique_handle.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/backend/introspection.hpp"
#include "keel/runtime/model_lifetime.hpp"
#include "keel/runtime/model_tasks.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {

template <class B>
struct model_traits {
  using native_type = typename B::model_handle;
  static constexpr native_type null() noexcept { return native_type{}; }
  static void close(native_type h) noexcept { B::destroy_model(h); }
};

// What a model holds beyond its native handle: the memory a capture took
// from a pool (keel/runtime/memory_pool.hpp). The model tells it where it
// executes (a pool shared between models checks that they never run
// concurrently), and destroying it returns the memory in the order of the
// stream that executed the model last.
template <class B>
struct model_attachment {
  virtual ~model_attachment() = default;
  virtual void before_execute(typename B::stream_handle s) = 0;
  virtual void after_execute(typename B::stream_handle s) noexcept = 0;
};

// A pool a capture draws from: begin_capture registers the capture's id
// (allocations on a stream of that capture then belong to the attachment it
// returns), end_capture unregisters it (the capture ended, either way).
template <class B>
struct capture_memory_source {
  virtual ~capture_memory_source() = default;
  virtual std::shared_ptr<model_attachment<B>> begin_capture(std::uint64_t capture_id) = 0;
  virtual void end_capture(std::uint64_t capture_id) noexcept = 0;
};

// A backend with conditional bodies tells them apart (checked::conditionals::is_body).
template <class B>
using is_body_call = decltype(B::is_body(std::declval<typename B::model_handle>()));

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
    B::execute(checked("keel::model::execute"), checked_handle(stream, "keel::model::execute"));
  }
  /** @brief Top-level recorded tasks (a task group counts as one). */
  std::size_t task_count() const { return B::task_count(checked("keel::model::task_count")); }
  /** @brief Task groups marked in the model. */
  std::size_t group_count() const { return B::group_count(checked("keel::model::group_count")); }

  // ---- identity, lifetime, introspection (the introspection layer) ----------
  // A model being built (model_builder::model()) has not ended for these: it
  // has its id, takes a name and destroy callbacks, abort() finds no
  // execution to stop (none is issued before the build ends), and tasks()
  // and streams() list nothing until the build ends.
  /** @brief Stable, unique per process: the capture's capture_info::capture_id (aclmdlRIGetId on ACL). */
  std::uint64_t id() const { return introspected<B>::model_id(checked("keel::model::id")); }
  /**
   * @brief Names the model (at most 512 bytes of valid UTF-8, no NUL; the
   * last name set wins). @throws keel::error invalid_parameter (the model keeps its name).
   */
  void set_name(std::string_view name) const { introspected<B>::set_model_name(checked("keel::model::set_name"), name); }
  /** @brief The model's name, empty until set_name. */
  std::string name() const { return introspected<B>::model_name(checked("keel::model::name")); }
  /**
   * @brief Registers `fn(user)` to run when the model is destroyed, on the
   * destroying thread; the returned registration unregisters it when dropped.
   * @throws keel::error null_parameter (no function), invalid_parameter (fn already registered on this model).
   */
  basic_destroy_callback<B> on_destroy(void (*fn)(void*), void* user = nullptr) const {
    auto m = checked("keel::model::on_destroy");
    introspected<B>::add_destroy_callback(m, fn, user);
    return basic_destroy_callback<B>(m, fn, user, B::model_life(m));
  }
  /**
   * @brief Stops the executions issued so far, running or queued, before
   * their next task; their streams report task_failed at synchronize().
   * Executions issued afterwards run (execute again to rerun).
   *
   * The abort reaches what runs inside those executions: their conditional
   * bodies at any depth, their WHILE loops (which end), and the models they
   * execute; an execution whose last task was running when abort() came
   * reports task_failed too. Aborting a model that runs inside another's
   * execution (a model it executes) stops those runs, and the execution
   * around them fails with them.
   */
  void abort() const { introspected<B>::abort_model(checked("keel::model::abort")); }
  /** @brief The model's streams, in the order they first issued a task. */
  std::vector<model_stream> streams() const { return introspected<B>::model_streams(checked("keel::model::streams")); }
  /** @brief Every task, stream by stream (as streams() lists them), each stream's in its order. */
  std::vector<task_info> tasks() const { return introspected<B>::model_tasks(checked("keel::model::tasks")); }
  /**
   * @brief The launch attributes of kernel task @p task (named as tasks()
   * lists it): aclmdlRIKernelTaskGetAttribute on ACL.
   * @throws keel::error invalid_parameter (no such task, or not a kernel).
   */
  ::keel::kernel_attributes kernel_attributes(const task_info& task) const {
    return introspected<B>::kernel_task_attributes(checked("keel::model::kernel_attributes"), task);
  }
  /** @brief The tasks of one of the model's streams, in its order. */
  std::vector<task_info> tasks(const model_stream& stream) const {
    std::vector<task_info> all = tasks(), mine;
    mine.reserve(stream.task_count);
    for (const task_info& t : all)
      if (t.stream == stream.index) mine.push_back(t);
    return mine;
  }

 private:
  typename B::model_handle checked(const char* api) const {
    return checked_handle(static_cast<const Derived&>(*this), api);
  }
};

}  // namespace detail
/// @endcond

/**
 * @brief A non-owning view of a model instance: of a keel model (every
 * basic_model is one, by derivation), or, from its native handle, of a
 * model keel captured.
 *
 * Ownership: none; the model must outlive the view. Thread safety: execute
 * from any thread; the view itself is a value. Exceptions: calls throw keel::error.
 */
template <KEEL_CAPTURE_BACKEND B>
class basic_model_ref : public detail::model_ops<basic_model_ref<B>, B> {
  using native_of = detail::native_of<B, typename B::model_handle>;

 public:
  /// The vendor's model handle (aclmdlRI on ACL; the backend's own handle where it has no vendor).
  using native_handle_type = typename native_of::type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  constexpr basic_model_ref() noexcept = default;
  /**
   * @brief Views @p native, a model of @p dev keel captured (a model's
   * native_handle(), or one its release() gave up); keel never destroys it.
   * @throws keel::error null_parameter; invalid_parameter for a model keel
   * did not capture (keel has no books for it), where the backend can tell.
   */
  basic_model_ref(device_type& dev, native_handle_type native) : handle_(view(dev, native, "keel::model_ref")) {}
  basic_model_ref(device_type&, std::nullptr_t) = delete;  ///< a null model is no model to view
  basic_model_ref(device_type&, int) = delete;             ///< 0 is no model to view

  /// The vendor's native handle (aclmdlRI on ACL), null when empty.
  native_handle_type native_handle() const noexcept { return native_of::to(handle_); }
  /// Whether this holds a handle.
  constexpr explicit operator bool() const noexcept { return handle_ != typename B::model_handle{}; }
  /// Whether both view the same model (or both are empty).
  friend constexpr bool operator==(const basic_model_ref& a, const basic_model_ref& b) noexcept {
    return a.handle_ == b.handle_;
  }
  /// Whether they view different models.
  friend constexpr bool operator!=(const basic_model_ref& a, const basic_model_ref& b) noexcept {
    return !(a == b);
  }

  /// @cond
  constexpr basic_model_ref(detail::from_handle_t, typename B::model_handle h) noexcept : handle_(h) {}
  /// @endcond

 protected:
  /// @cond
  static typename B::model_handle view(device_type& dev, native_handle_type native, const char* api,
                                       adoption how = adoption::view) {
    return detail::view_native<B, typename B::model_handle>(dev, native, how, api, "model");
  }

  typename B::model_handle handle_{};  // the backend's handle (its record of the model); null when empty
  /// @endcond

 private:
  friend struct detail::handle_access;
};

/**
 * @brief An owning model instance: work captured once, executed many times.
 * Destroying it while executions are in flight is safe (they keep it alive)
 * and frees one of the device's live-model slots; what its work uses
 * (buffers, events, arguments) lives until then. It is a basic_model_ref
 * too, so whatever takes a view takes the model.
 *
 * Ownership: unique (release, reset, swap). Never assign to it through a
 * reference to its basic_model_ref base. Thread safety: execute from any
 * thread; the handle is not synchronised. Exceptions: calls throw
 * keel::error; the destructor is noexcept.
 */
template <KEEL_CAPTURE_BACKEND B>
class basic_model : public basic_model_ref<B> {
  using base = basic_model_ref<B>;
  using traits = detail::model_traits<B>;
  using native_of = detail::native_of<B, typename B::model_handle>;

 public:
  /// The vendor's model handle (see basic_model_ref).
  using native_handle_type = typename base::native_handle_type;
  /// The backend's device type.
  using device_type = typename B::device_type;

  basic_model() noexcept = default;
  /**
   * @brief Takes ownership of @p native, a model of @p dev keel captured
   * that release() gave up: destroying the result destroys it.
   * A conditional body is never adopted: its parent model owns it and
   * destroys it (view it with basic_model_ref instead).
   * @throws keel::error null_parameter; invalid_parameter when a keel model
   * owns it already, or for a model keel did not capture, where the backend
   * can tell; invalid_handle for a conditional body.
   */
  static basic_model from_native_handle(device_type& dev, native_handle_type native) {
    static constexpr const char* api = "keel::model::from_native_handle";
    const typename B::model_handle h = base::view(dev, native, api, adoption::own);
    if constexpr (keel::detail::is_detected_v<detail::is_body_call, B>) {
      if (B::is_body(h))  // a view of it took nothing: refused as it was
        throw_error(errc::invalid_handle, api,
                    "the model is a conditional body: its parent model owns and destroys it, so a body is never "
                    "adopted (view it with model_ref)");
    }
    return basic_model(h);
  }
  static basic_model from_native_handle(device_type&, std::nullptr_t) = delete;  ///< no model to own
  static basic_model from_native_handle(device_type&, int) = delete;             ///< no model to own

  /// Takes the other object's handle (and pool memory); the other is left empty.
  basic_model(basic_model&& o) noexcept
      : base(detail::from_handle, std::exchange(o.handle_, {})), memory_(std::move(o.memory_)) {}
  /// Releases what this holds, then takes the other object's handle; the other is left empty.
  basic_model& operator=(basic_model&& other) noexcept {
    if (this != &other) {
      reset();
      this->handle_ = std::exchange(other.handle_, {});
      memory_ = std::move(other.memory_);
    }
    return *this;
  }
  basic_model(const basic_model&) = delete;
  basic_model& operator=(const basic_model&) = delete;
  ~basic_model() { reset(); }

  /**
   * @brief Runs the recorded work on @p stream (see model_ops::execute). A
   * model that holds pool memory also checks the pool's sharing rule: two
   * models sharing memory of one pool never execute concurrently (throws
   * keel::error invalid_state naming the pool when it can tell they would).
   */
  void execute(basic_stream_ref<B> stream) const {
    auto m = detail::checked_handle(*this, "keel::model::execute");
    auto s = detail::checked_handle(stream, "keel::model::execute");
    // Copied before the work is issued: a host function of the model may
    // destroy this handle while execute() is still running.
    const std::shared_ptr<detail::model_attachment<B>> memory = memory_;
    if (memory) memory->before_execute(s);
    B::execute(m, s);
    if (memory) memory->after_execute(s);
  }

  /**
   * @brief Gives up ownership: returns the native model and leaves this
   * empty; the caller destroys it (or gives it back). Pool memory the model
   * held is returned now, in the order of the stream that executed it last.
   */
  [[nodiscard]] native_handle_type release() noexcept {
    memory_.reset();
    return native_of::release(std::exchange(this->handle_, {}));
  }
  /**
   * @brief Destroys the handle held (if any), then returns the pool memory it
   * held (in the order of the stream that executed it last); this is left empty.
   */
  void reset() noexcept {
    detail::replace_owned<traits>(this->handle_, typename B::model_handle{});
    memory_.reset();
  }
  /// Whether the model holds memory a capture took from a pool.
  bool holds_pool_memory() const noexcept { return static_cast<bool>(memory_); }
  /// Exchanges what this and the other object hold.
  void swap(basic_model& other) noexcept {
    std::swap(this->handle_, other.handle_);
    memory_.swap(other.memory_);
  }
  friend void swap(basic_model& a, basic_model& b) noexcept { a.swap(b); }
  /// A non-owning view (the model is one already: this copies it as a plain view).
  basic_model_ref<B> ref() const noexcept { return *this; }

 private:
  template <KEEL_CAPTURE_BACKEND>
  friend class basic_capture_scope;
  friend struct detail::handle_access;
  explicit basic_model(typename B::model_handle h) noexcept : base(detail::from_handle, h) {}
  // What a capture scope's end() makes of the backend's new model.
  static basic_model adopt(typename B::model_handle h) noexcept { return basic_model(h); }
  std::shared_ptr<detail::model_attachment<B>> memory_;
};

/**
 * @brief Captures the work issued to a stream (and to streams that fork
 * from it through events) into a model, from construction to end().
 *
 * Every keel scope (capture, task group, update) finishes the same way:
 * end() finishes it (here: returns the model), cancel() drops it, and a
 * scope left without either (an early return, an exception) cancels itself
 * and reports "left without end() or cancel()" to keel's error handler
 * (errc::invalid_state), never finishing silently. Cancelling a capture
 * ends it and discards the partial model.
 *
 * Ownership: holds the capture; neither copyable nor movable. Thread
 * safety: one scope per stream. Exceptions: the constructor throws
 * capture_violation (already capturing) or resource_limit (live models);
 * end() throws capture_violation (open group, unjoined fork) and leaves the
 * capture running, to be fixed or cancelled; cancel() and the destructor
 * throw nothing.
 *
 * While it captures, the calls that would wait for work the capture holds
 * back are refused (capture_violation; from every thread in global mode,
 * from the capturing thread in thread-local mode, nowhere in relaxed mode):
 * the capturing stream's synchronize() and query(), the device's
 * synchronize(), blocking copies (stream::copy), and synchronize() and
 * query() of an event recorded in the capture. Synchronizing other streams
 * and events recorded outside it stays safe.
 *
 * Given a memory pool (keel/runtime/memory_pool.hpp), every allocation from
 * that pool on a stream of this capture belongs to the model end() returns:
 * it lives as long as the model and goes back to the pool when the model is
 * destroyed. A capture that ends any other way (cancel(), leaving the scope,
 * a failed end() followed by either) gives all of it back at once.
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
  /**
   * @brief Begins a capture on @p stream in @p mode whose model owns what it
   * allocates from @p pool (a basic_memory_pool or its view). @throws
   * keel::error capture_violation / resource_limit as the other constructor;
   * nothing is taken from the pool then.
   */
  template <class Pool, class = decltype(std::declval<const Pool&>().capture_source())>
  basic_capture_scope(basic_stream_ref<B> stream, const Pool& pool, capture_mode mode = capture_mode::global)
      : stream_(stream) {
    auto source = pool.capture_source();
    B::capture_begin(stream_.checked("keel::capture_scope"), mode);
    try {
      capture_id_ = stream_capture_status<B>(stream_.native_handle()).capture_id;
      memory_ = source->begin_capture(capture_id_);
      source_ = std::move(source);
    } catch (...) {
      B::capture_discard(stream_.native_handle());
      throw;
    }
  }
  basic_capture_scope(const basic_capture_scope&) = delete;
  basic_capture_scope& operator=(const basic_capture_scope&) = delete;
  /// Left while still active: cancels the capture and reports it (see the class).
  ~basic_capture_scope() {
    if (!active_) return;
    cancel();
    detail::report_scope_left_unfinished("keel::capture_scope", "the capture was discarded",
                                         std::uncaught_exceptions() > 0);
  }

  /**
   * @brief Ends the capture and returns the model (owning what the capture
   * took from its pool). @throws keel::error invalid_state when the scope
   * already ended or was cancelled, capture_violation when the capture
   * cannot end (it then stays active).
   */
  [[nodiscard]] basic_model<B> end() {
    if (!active_)
      throw_error(errc::invalid_state, "keel::capture_scope::end", "the capture already ended (end() or cancel())");
    auto model = basic_model<B>::adopt(B::capture_end(stream_.native_handle()));
    active_ = false;
    if (source_) source_->end_capture(capture_id_);
    model.memory_ = std::move(memory_);
    source_.reset();
    return model;
  }
  /** @brief Ends the capture and throws the partial model away, with what it took from its pool; nothing when not active. Throws: nothing. */
  void cancel() noexcept {
    if (active_) B::capture_discard(stream_.native_handle());
    active_ = false;
    if (source_) source_->end_capture(capture_id_);
    source_.reset();
    memory_.reset();
  }
  /// Whether the capture is still in progress (neither end() nor cancel() finished it).
  bool active() const noexcept { return active_; }
  /// The stream the capture began on.
  basic_stream_ref<B> stream() const noexcept { return stream_.get(); }

 private:
  detail::stream_anchor<B> stream_;
  bool active_ = true;
  std::uint64_t capture_id_ = 0;
  std::shared_ptr<detail::capture_memory_source<B>> source_;
  std::shared_ptr<detail::model_attachment<B>> memory_;
};

KEEL_END_NAMESPACE  // namespace keel
