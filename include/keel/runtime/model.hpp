// SPDX-License-Identifier: Apache-2.0
// basic_model (a captured model instance) and its view, and
// basic_capture_scope, the RAII capture that yields one.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
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
#include "keel/runtime/model_memory.hpp"
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

// What a model holds beyond its native handle (keel/runtime/model_memory.hpp).
template <class B>
using model_attachment = model_memory<typename B::stream_handle>;

// Whether B keeps a model's memory in the model's books
// (attach_model_memory, model_memory, detach_model_memory): then the owner
// and every view of the model reach it, and B's execute applies the pool's
// sharing rule. Without them the owner holds it and applies the rule itself.
template <class B, class = void>
struct keeps_model_memory : std::false_type {};
template <class B>
struct keeps_model_memory<B, std::void_t<decltype(B::model_memory(std::declval<typename B::model_handle>())),
                                          decltype(B::detach_model_memory(std::declval<typename B::model_handle>())),
                                          decltype(B::attach_model_memory(std::declval<typename B::model_handle>(),
                                                                          std::shared_ptr<model_attachment<B>>{}))>>
    : std::true_type {};

// The memory of several pools one model holds (its capture's, and its
// conditional bodies' own pools'), executed as one.
template <class B>
struct model_attachments final : model_attachment<B> {
  std::vector<std::shared_ptr<model_attachment<B>>> parts;
  void before_execute(typename B::stream_handle s) override {
    std::size_t claimed = 0;
    try {
      for (; claimed < parts.size(); ++claimed) parts[claimed]->before_execute(s);
    } catch (...) {
      while (claimed-- > 0) parts[claimed]->execute_failed(s);
      throw;
    }
  }
  void after_execute(typename B::stream_handle s) noexcept override {
    for (const auto& p : parts) p->after_execute(s);
  }
  void execute_failed(typename B::stream_handle s) noexcept override {
    for (const auto& p : parts) p->execute_failed(s);
  }
};

// A pool a capture draws from: begin_capture registers the capture's id
// (allocations on a stream of that capture then belong to the attachment it
// returns), join_capture registers a capture made for another (a conditional
// body's, for its parent's: false when that one is not registered), and
// end_capture unregisters one, with those that joined it (the capture
// ended, either way). allocate_span is an allocation for a capture that
// names no pool itself (an operator's workspace): a span owning its block.
template <class B>
struct capture_memory_source {
  virtual ~capture_memory_source() = default;
  virtual std::shared_ptr<model_attachment<B>> begin_capture(std::uint64_t capture_id) = 0;
  virtual bool join_capture(std::uint64_t capture_id, std::uint64_t parent_id) = 0;
  virtual void end_capture(std::uint64_t capture_id) noexcept = 0;
  virtual memory_span allocate_span(typename B::stream_handle s, std::size_t bytes) = 0;
};

// Which pool each capture in progress draws from, by device and capture id:
// capture scopes given a pool add theirs, conditional bodies captured
// inside one add the same pool under their own id, and what allocates for a
// capture without naming a pool (ops::run_on's workspace) finds it here, so
// one pool given to capture_scope covers every allocation of the capture.
// Thread-safe (one lock; a count read first, so a process without such a
// capture pays one atomic load).
template <class B>
class capture_memory_routes {
 public:
  using source_ptr = std::shared_ptr<capture_memory_source<B>>;
  static void add(const void* device, std::uint64_t id, source_ptr source) {
    state& st = get();
    std::lock_guard<std::mutex> lock(st.m);
    st.routes.push_back(route{device, id, std::move(source)});
    st.count.store(st.routes.size(), std::memory_order_release);
  }
  static void remove(const void* device, std::uint64_t id) noexcept {
    state& st = get();
    source_ptr gone;  // released outside the lock
    std::lock_guard<std::mutex> lock(st.m);
    for (auto it = st.routes.begin(); it != st.routes.end(); ++it) {
      if (it->device == device && it->id == id) {
        gone = std::move(it->source);
        st.routes.erase(it);
        break;
      }
    }
    st.count.store(st.routes.size(), std::memory_order_release);
  }
  static source_ptr find(const void* device, std::uint64_t id) {
    state& st = get();
    if (st.count.load(std::memory_order_acquire) == 0) return nullptr;
    std::lock_guard<std::mutex> lock(st.m);
    for (const route& r : st.routes)
      if (r.device == device && r.id == id) return r.source;
    return nullptr;
  }
  // The pool the capture @p s takes part in draws from (null: none, or not capturing).
  static source_ptr of_stream(typename B::stream_handle s) {
    if (get().count.load(std::memory_order_acquire) == 0) return nullptr;
    const capture_info info = stream_capture_status<B>(s);
    if (!info.capturing()) return nullptr;
    return find(&B::device_of(s), info.capture_id);
  }

  // A conditional body's capture @p id, made for capture @p parent: its
  // memory goes to the model of the capture at the root of that chain.
  static void link_body(const void* device, std::uint64_t id, std::uint64_t parent) {
    state& st = get();
    std::lock_guard<std::mutex> lock(st.m);
    std::uint64_t root = parent;
    for (const link& l : st.links)
      if (l.device == device && l.id == parent) root = l.root;
    st.links.push_back(link{device, id, root});
    st.pending.store(st.links.size() + st.held.size(), std::memory_order_release);
  }
  static void unlink_body(const void* device, std::uint64_t id) noexcept {
    state& st = get();
    std::lock_guard<std::mutex> lock(st.m);
    st.links.erase(std::remove_if(st.links.begin(), st.links.end(),
                                  [&](const link& l) { return l.device == device && l.id == id; }),
                   st.links.end());
    st.pending.store(st.links.size() + st.held.size(), std::memory_order_release);
  }
  // What a body's own pool gave its capture goes to the root capture's
  // model: held here until that capture ends (take) or is discarded.
  static void adopt(const void* device, std::uint64_t body, std::shared_ptr<model_attachment<B>> memory) {
    state& st = get();
    std::lock_guard<std::mutex> lock(st.m);
    std::uint64_t root = body;
    for (const link& l : st.links)
      if (l.device == device && l.id == body) root = l.root;
    st.held.push_back(held_memory{device, root, std::move(memory)});
    st.pending.store(st.links.size() + st.held.size(), std::memory_order_release);
  }
  // Moves what waits for capture @p root to @p out. Strong guarantee.
  static void take(const void* device, std::uint64_t root, std::vector<std::shared_ptr<model_attachment<B>>>& out) {
    state& st = get();
    std::lock_guard<std::mutex> lock(st.m);
    const auto mine = [&](const held_memory& h) { return h.device == device && h.root == root; };
    out.reserve(out.size() + static_cast<std::size_t>(std::count_if(st.held.begin(), st.held.end(), mine)));
    for (held_memory& h : st.held)
      if (mine(h)) out.push_back(std::move(h.memory));  // reserved: cannot throw
    st.held.erase(std::remove_if(st.held.begin(), st.held.end(), mine), st.held.end());
    st.pending.store(st.links.size() + st.held.size(), std::memory_order_release);
  }
  // Whether any body memory waits for its root capture (one atomic load).
  static bool any_pending() noexcept { return get().pending.load(std::memory_order_acquire) != 0; }

 private:
  struct route {
    const void* device;
    std::uint64_t id;
    source_ptr source;
  };
  struct link {
    const void* device;
    std::uint64_t id;
    std::uint64_t root;
  };
  struct held_memory {
    const void* device;
    std::uint64_t root;
    std::shared_ptr<model_attachment<B>> memory;
  };
  struct state {
    std::mutex m;
    std::vector<route> routes;
    std::atomic<std::size_t> count{0};
    std::vector<link> links;
    std::vector<held_memory> held;
    std::atomic<std::size_t> pending{0};  // links.size() + held.size()
  };
  // Never destroyed: a scope may end during static destruction.
  static state& get() {
    static state* const st = new state;
    return *st;
  }
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
   * times, on any stream. A model that holds pool memory also checks the
   * pool's sharing rule, through its owner or any view: two models sharing
   * memory of one pool never execute concurrently (throws keel::error
   * invalid_state naming the pool when it can tell they would).
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
   * @brief Runs the recorded work on @p stream (see model_ops::execute, which
   * the pool's sharing rule is checked in; an owner checks it here only over
   * a backend that keeps no model books).
   */
  void execute(basic_stream_ref<B> stream) const {
    auto m = detail::checked_handle(*this, "keel::model::execute");
    auto s = detail::checked_handle(stream, "keel::model::execute");
    // Copied before the work is issued: a host function of the model may
    // destroy this handle while execute() is still running.
    const std::shared_ptr<detail::model_attachment<B>> memory = memory_;
    if (memory) memory->before_execute(s);
    try {
      B::execute(m, s);
    } catch (...) {
      if (memory) memory->execute_failed(s);
      throw;
    }
    if (memory) memory->after_execute(s);
  }

  /**
   * @brief Gives up ownership: returns the native model and leaves this
   * empty; the caller destroys it (or gives it back). Pool memory the model
   * held is returned now, in the order of the stream that executed it last.
   */
  [[nodiscard]] native_handle_type release() noexcept {
    memory_.reset();
    if constexpr (detail::keeps_model_memory<B>::value) {
      if (this->handle_ != typename B::model_handle{}) (void)B::detach_model_memory(this->handle_);
    }
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
  bool holds_pool_memory() const noexcept {
    if constexpr (detail::keeps_model_memory<B>::value) {
      if (this->handle_ != typename B::model_handle{} && B::model_memory(this->handle_) != nullptr) return true;
    }
    return static_cast<bool>(memory_);
  }
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
  // The capture's pool memory: into the model's books where the backend
  // keeps them (its destroy_model drops it), else held here.
  void take_memory(std::shared_ptr<detail::model_attachment<B>> memory) noexcept {
    if (!memory) return;
    if constexpr (detail::keeps_model_memory<B>::value)
      B::attach_model_memory(this->handle_, std::move(memory));
    else
      memory_ = std::move(memory);
  }
  std::shared_ptr<detail::model_attachment<B>> memory_;  // a backend without model books: the owner holds it
};

/**
 * @brief Captures the work issued to a stream (and to streams that fork
 * from it through events) into a model, from construction to end().
 *
 * Every keel scope (capture, task group, update) finishes the same way:
 * end() finishes it (here: returns the model), cancel() drops it, and a
 * scope left without either cancels itself, never finishing silently: left
 * by a normal return (an early return) it also reports "left without end()
 * or cancel()" to keel's error handler (errc::invalid_state); left by an
 * exception it reports nothing (the exception tells). Cancelling a capture
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
 * Given a memory pool (keel/runtime/memory_pool.hpp), the pool covers every
 * allocation made for the capture, and each belongs to the model end()
 * returns: allocations from that pool on any stream of this capture (forked
 * streams too) and inside the conditional bodies captured in it
 * (basic_body_capture_scope, at any depth), and the workspaces
 * ops::run_on(stream, executor) allocates on those streams, which come from
 * this pool without it being registered as the streams' allocator. Each
 * lives as long as the model and goes back to the pool when the model is
 * destroyed; the pool's statistics count it meanwhile. A capture that ends any other way (cancel(), leaving the scope,
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
      try {
        detail::capture_memory_routes<B>::add(device_key(), capture_id_, source);
      } catch (...) {
        source->end_capture(capture_id_);
        memory_.reset();
        throw;
      }
      source_ = std::move(source);
    } catch (...) {
      B::capture_discard(stream_.native_handle());
      throw;
    }
  }
  basic_capture_scope(const basic_capture_scope&) = delete;
  basic_capture_scope& operator=(const basic_capture_scope&) = delete;
  /// Left while still active: cancels the capture and, after a normal return, reports it (see the class).
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
    using routes = detail::capture_memory_routes<B>;
    // What the own pools of conditional bodies captured in it gave (the
    // capture's id is known while it runs), joined before the end, which
    // cannot be undone: nothing after it allocates.
    if (routes::any_pending())
      routes::take(device_key(), stream_capture_status<B>(stream_.native_handle()).capture_id, body_memory_);
    std::shared_ptr<detail::model_attachments<B>> all;
    if (!body_memory_.empty()) {
      all = std::make_shared<detail::model_attachments<B>>();
      all->parts.reserve(body_memory_.size() + 1);
    }
    auto model = basic_model<B>::adopt(B::capture_end(stream_.native_handle()));
    active_ = false;
    if (source_) {
      routes::remove(device_key(), capture_id_);
      source_->end_capture(capture_id_);
    }
    if (all) {
      if (memory_) all->parts.push_back(std::move(memory_));
      for (auto& m : body_memory_) all->parts.push_back(std::move(m));  // reserved: cannot throw
      body_memory_.clear();
      memory_ = std::move(all);
    }
    model.take_memory(std::move(memory_));
    source_.reset();
    return model;
  }
  /** @brief Ends the capture and throws the partial model away, with what it took from its pool; nothing when not active. Throws: nothing. */
  void cancel() noexcept {
    using routes = detail::capture_memory_routes<B>;
    if (active_ && routes::any_pending()) {
      try {
        routes::take(device_key(), stream_capture_status<B>(stream_.native_handle()).capture_id, body_memory_);
      } catch (...) {  // left held: kept rather than given back while a discarded body may still hold it
      }
    }
    if (active_) B::capture_discard(stream_.native_handle());
    active_ = false;
    if (source_) {
      routes::remove(device_key(), capture_id_);
      source_->end_capture(capture_id_);
    }
    source_.reset();
    memory_.reset();
    body_memory_.clear();
  }
  /// Whether the capture is still in progress (neither end() nor cancel() finished it).
  bool active() const noexcept { return active_; }
  /// The stream the capture began on.
  basic_stream_ref<B> stream() const noexcept { return stream_.get(); }

 private:
  const void* device_key() const noexcept { return &B::device_of(stream_.native_handle()); }
  detail::stream_anchor<B> stream_;
  bool active_ = true;
  std::uint64_t capture_id_ = 0;
  std::shared_ptr<detail::capture_memory_source<B>> source_;
  std::shared_ptr<detail::model_attachment<B>> memory_;
  std::vector<std::shared_ptr<detail::model_attachment<B>>> body_memory_;  // its bodies' own pools'
};

KEEL_END_NAMESPACE  // namespace keel
