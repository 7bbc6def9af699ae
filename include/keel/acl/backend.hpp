// SPDX-License-Identifier: Apache-2.0
// The ACL backend: keel's runtime templates (basic_stream, basic_event,
// basic_model, capture and update scopes, buffers) over the ACL C API, with
// every function resolved at run time from CANN's libraries through keel
// library leases. keel links nothing of CANN; a function an older CANN lacks
// fails as keel::errc::not_supported naming it, when it is first used.
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "keel/acl/api.hpp"
#include "keel/acl/library.hpp"
#include "keel/acl/status.hpp"
#include "keel/acl/types.hpp"
#include "keel/core/error.hpp"
#include "keel/plugin/library_lease.hpp"
#include "keel/runtime/backend.hpp"
#include "keel/runtime/runtime.hpp"
#include "keel/runtime/types.hpp"

namespace keel::acl {

class device;

/** @brief Where and which ACL device to open. A plain value. */
struct device_options {
  /// The ACL device id (aclrtSetDevice).
  std::int32_t device_id = 0;
  /// The directory holding libascendcl.so (and libnnopbase.so, libopapi.so);
  /// empty: ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, LD_LIBRARY_PATH, the loader's
  /// own search (library_candidates()).
  std::string library_directory;
};

/// @cond
namespace detail {

// The file the dynamic loader would open for a bare soname: LD_LIBRARY_PATH
// first, then whatever dlopen finds (ld.so cache, system paths). A lease
// needs a real path, because it identifies libraries by file.
inline std::string locate(const std::string& candidate) {
  if (candidate.find('/') != std::string::npos) return candidate;
  if (const char* paths = std::getenv("LD_LIBRARY_PATH")) {
    std::string_view rest(paths);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      std::string dir(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (dir.empty()) continue;
      std::string path = dir + "/" + candidate;
      if (::access(path.c_str(), F_OK) == 0) return path;
    }
  }
  std::string found;
  if (void* handle = ::dlopen(candidate.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
    link_map* map = nullptr;
    if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) found = map->l_name;
    ::dlclose(handle);
  }
  return found;
}

// A lease on the first candidate that loads, or an empty lease; `tried`
// collects what failed, for the error message.
inline library_lease lease_on(library lib, const std::string& directory, std::string& tried) {
  for (const std::string& candidate : library_candidates(lib, directory)) {
    const std::string path = locate(candidate);
    if (path.empty()) {
      tried += "\n  " + candidate + ": not found";
      continue;
    }
    try {
      // RTLD_NODELETE: the lease still counts users, but the last one leaves
      // the library mapped, as linking it would. CANN's runtime starts threads
      // and keeps per-thread state (aclGetRecentErrMsg); unmapping it under
      // them (or under a sanitizer's thread-local bookkeeping) is not safe.
      load_options options;
      options.mode = static_cast<boost::dll::load_mode::type>(RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
      return library_loader::global().acquire(path, options);
    } catch (const keel::error& e) {
      tried += "\n  " + path + ": " + e.rule();
    }
  }
  return {};
}

// keel's capture modes as ACL's aclmdlRICaptureMode.
constexpr acl::capture_mode native_mode(keel::capture_mode mode) noexcept {
  return mode == keel::capture_mode::global          ? acl::capture_mode::global
         : mode == keel::capture_mode::thread_local_ ? acl::capture_mode::per_thread
                                                     : acl::capture_mode::relaxed;
}

struct stream_box;

struct model_box {
  model_handle native = nullptr;
  device* dev = nullptr;
  std::size_t groups = 0;
  std::size_t tasks = 0;  // keel's tasks captured into it (keel's books; ACL's subset cannot count)
  std::shared_ptr<std::atomic<bool>> alive;
  std::vector<std::shared_ptr<void>> keep;  // what the captured copies use (host callables included)
  bool host_calls = false;  // it replays host callables: its executing stream needs a reporting thread
};

struct group_box {
  task_group_handle native = nullptr;
  std::size_t size = 0;  // keel launches marked into it
  std::shared_ptr<std::atomic<bool>> model_alive;
};

struct event_box {
  event_handle native = nullptr;
  device* dev = nullptr;
  keel::event_flags flags = keel::event_flags::default_;
  bool adopted = false;  // made elsewhere: keel never destroys it; the record belongs to the device
  // Where its last record was issued inside a capture keel began (the
  // device's captures_m_ guards these): the capture (its origin's
  // capture_alive), the stream and how many tasks that stream had issued in
  // it. A wait on the event joins that stream's work up to there.
  std::shared_ptr<std::atomic<bool>> recorded_in;
  stream_box* recorded_on = nullptr;
  std::uint64_t recorded_on_id = 0;
  std::size_t recorded_at = 0;
};

struct host_call;

// The host callables run for one stream (launch_host over
// aclrtLaunchCallback, and captured ones its model executions replay): the
// reporting thread subscribed to the stream, and the error state a throwing
// callable leaves until the stream's next synchronize.
struct host_callbacks {
  std::thread reporter;            // loops on aclrtProcessReport until `stop`
  std::uint64_t reporter_id = 0;   // what aclrtSubscribeReport was given
  std::atomic<bool> stop{false};
  std::atomic<bool> subscribed{false};
  std::mutex m;                    // guards the error state below
  bool failed = false;
  std::string failure;
  host_callbacks() = default;
  host_callbacks(const host_callbacks&) = delete;
  host_callbacks& operator=(const host_callbacks&) = delete;
  // A last resort (backend::stop_host_callbacks unsubscribes and joins
  // first): a joinable std::thread destroyed would std::terminate.
  ~host_callbacks() {
    stop.store(true, std::memory_order_release);
    if (reporter.joinable()) reporter.join();
  }
};

// One launch_host call: the userData of its aclrtLaunchCallback. It reports
// to the stream whose reporting thread runs it (backend::reporting_for), so
// it holds no pointer to any stream.
struct host_call {
  bool once = true;  // eager: deleted after it ran; captured: owned by the model (its keep list)
  virtual ~host_call() = default;
  virtual void run() = 0;
};
template <class F>
struct host_call_of final : host_call {
  explicit host_call_of(F&& fn) : f(std::move(fn)) {}
  explicit host_call_of(const F& fn) : f(fn) {}
  void run() override { f(); }
  F f;
};

struct stream_box {
  stream_handle native = nullptr;
  device* dev = nullptr;
  std::uint64_t id = 0;
  bool adopted = false;  // made elsewhere: keel never destroys it; the record belongs to the device
  // The owner and every scope on the stream hold the record (retain_stream);
  // after destroy_stream the ACL stream is gone and `destroyed` says so, so a
  // scope's late end never hands ACL a destroyed (or reused) handle.
  std::atomic<long> refs{1};
  std::atomic<bool> destroyed{false};
  std::mutex m;                              // guards the fields below
  std::vector<std::shared_ptr<void>> keep;   // owners of memory queued work uses, until a synchronize
  keel::capture_mode mode = keel::capture_mode::global;  // of the capture this stream began
  std::shared_ptr<std::atomic<bool>> capture_alive;
  model_handle capture_model = nullptr;  // ACL's model of the capture this stream began
  std::size_t capture_groups = 0;
  std::size_t capture_tasks = 0;  // keel's tasks in that capture, from every stream in it
  std::size_t group_tasks = 0;    // keel launches marked into the group open on this stream
  std::thread::id capture_thread;
  bool group_open = false;
  bool updating = false;
  std::unique_ptr<host_callbacks> callbacks;  // made by the first launch_host (or execution of a model with one)
  bool capture_host_calls = false;  // the capture this stream began holds host callables (guarded by m)
  // keel's join books (the device's captures_m_ guards these), as the host
  // backend keeps them: a stream that joined a capture by waiting on an
  // event and then issued tasks is a lane of the capture's origin; capture
  // end refuses a lane whose tasks no stream of the capture waited for.
  stream_box* lane_of = nullptr;   // the origin of the capture this stream joined and issued tasks in
  std::size_t lane_tasks = 0;      // keel's tasks it issued in that capture
  std::size_t lane_joined = 0;     // how many of them another stream of the capture waited for
  std::vector<stream_box*> lanes;  // on an origin: the lanes of its capture
};

// Memory released on a stream, freed once the stream passes `event`.
struct deferred_release {
  event_handle event = nullptr;
  stream_handle stream = nullptr;  // where it was released (ACL's handle)
  std::shared_ptr<void> alloc;
};

struct block {
  void* data = nullptr;
  std::size_t bytes = 0;
  memory_kind kind = memory_kind::device;
  stream_box* stream = nullptr;
  std::shared_ptr<void> alloc;  // its deleter frees with the matching ACL call
};

}  // namespace detail
/// @endcond

/**
 * @brief An ACL device opened through run-time-loaded CANN libraries: holds
 * leases on libascendcl.so, libnnopbase.so and libopapi.so (the last two
 * optional: without them only aclnn calls are missing), the resolved
 * function table, and the device-wide capture books.
 *
 * Ownership: owns the leases (the libraries stay loaded while it lives); must
 * outlive every stream, event, model and buffer made on it. Not copyable or
 * movable. Thread safety: every member is thread-safe. Exceptions: the
 * constructor throws keel::error library_load_failed (listing every path
 * tried) or the ACL status of aclInit / aclrtSetDevice.
 *
 * It calls aclInit (accepting "already initialized": another client of ACL in
 * the process may have done it) and never aclFinalize: finalizing is the
 * process owner's decision, or two clients of one runtime break each other.
 */
class device {
 public:
  /// Loads the ACL libraries named by @p options and opens the device (aclInit, aclrtSetDevice).
  explicit device(device_options options = {}) : id_(options.device_id) {
    std::string tried;
    leases_[0] = detail::lease_on(library::ascendcl, options.library_directory, tried);
    if (!leases_[0]) throw_error(keel::errc::library_load_failed, "keel::acl::device", "cannot load libascendcl.so; tried:" + tried);
    leases_[1] = detail::lease_on(library::nnopbase, options.library_directory, tried);
    leases_[2] = detail::lease_on(library::opapi, options.library_directory, tried);
    api_ = api::resolve([this](library lib, const char* name) -> void* {
      const library_lease& lease = leases_[static_cast<int>(lib)];
      return lease ? ::dlsym(lease.native().native(), name) : nullptr;
    });
    const status init = api_.aclInit(nullptr);
    if (init != 100002) check(init, "aclInit");  // ACL_ERROR_REPEAT_INITIALIZE: someone else did
    check(api_.aclrtSetDevice(id_), "aclrtSetDevice");
    current_on_this_thread() = serial_;
  }
  device(const device&) = delete;
  device& operator=(const device&) = delete;
  /** Frees what is still released in stream order, once its stream has passed the release. */
  ~device();

  /**
   * @brief Waits until every stream that a host callable of its own
   * destroyed (a deferred destruction, reported as would_deadlock) is gone.
   * The destructor does this too. Thread safety: any thread but such a
   * callable's. Throws: nothing.
   */
  void finish_deferred_destroys() noexcept;

  /**
   * @brief The resolved ACL function table, with this device made current on
   * the calling thread first (see make_current()). Throws: nothing.
   */
  const api& functions() const noexcept {
    enter();
    return api_;
  }

  /**
   * @brief Makes this device the calling thread's current one
   * (aclrtSetDevice), unless keel already did on this thread.
   *
   * CANN binds a device's default context to a thread with aclrtSetDevice,
   * and a runtime call on a thread without one fails (ACL_ERROR_RT_CONTEXT_NULL,
   * 107002). keel does this itself on the first call that reaches ACL from
   * each thread, so keel's handles work from any thread; the check is one
   * thread_local compare. keel remembers only what keel set: a thread that
   * switches itself to another device through ACL directly must call this
   * again before using keel there. @throws keel::error the aclrtSetDevice status.
   */
  void make_current() const {
    if (current_on_this_thread() == serial_) return;
    check(api_.aclrtSetDevice(id_), "aclrtSetDevice");
    current_on_this_thread() = serial_;
  }
  /** @brief The ACL device id. Throws: nothing. */
  std::int32_t id() const noexcept { return id_; }
  /** @brief The lease on @p lib (empty when it was not found). Throws: nothing. */
  const library_lease& lease(library lib) const noexcept { return leases_[static_cast<int>(lib)]; }

  /** @brief Throws keel::error for a failed status, with ACL's recent message. */
  void check(status code, const char* function) const { keel::acl::check(code, function, api_.aclGetRecentErrMsg); }

  /**
   * @brief Forgets keel's record of an adopted stream (adopt_stream()), after
   * its owner destroyed it or before it may: the address can come back for a
   * new stream. No keel handle may still use the record, and the stream must
   * have finished the work keel issued to it (the owners of memory that work
   * used are dropped here); a capture keel began on it is forgotten, not
   * ended. Throws: nothing.
   */
  void forget_stream(acl::stream_handle native) noexcept;
  /**
   * @brief How many released buffers still wait for their stream to pass the
   * release point (after freeing those it has passed). Throws: nothing.
   */
  std::size_t pending_releases() noexcept;

  /** @brief Forgets keel's record of an adopted event (adopt_event()), as forget_stream(). */
  void forget_event(acl::event_handle native) noexcept {
    std::unique_ptr<detail::event_box> gone;
    std::lock_guard<std::mutex> lock(adopted_m_);
    auto it = adopted_events_.find(native);
    if (it == adopted_events_.end()) return;
    gone = std::move(it->second);
    adopted_events_.erase(it);
  }

 private:
  friend struct backend;

  // The serial of the device keel last made current on this thread (0: none).
  static std::uint64_t& current_on_this_thread() noexcept {
    thread_local std::uint64_t serial = 0;
    return serial;
  }
  static std::uint64_t next_serial() noexcept {
    static std::atomic<std::uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }
  // make_current() for paths that cannot throw: a failure leaves the thread
  // unmarked, and the ACL call that follows reports the missing context.
  void enter() const noexcept {
    if (current_on_this_thread() == serial_) return;
    const auto set = api_.aclrtSetDevice.get();
    if (set != nullptr && set(id_) == 0) current_on_this_thread() = serial_;
  }

  library_lease leases_[3];
  api api_;
  std::int32_t id_;
  std::uint64_t serial_ = next_serial();  // names this device in threads' current_on_this_thread()
  std::atomic<std::uint64_t> next_stream_id_{1};
  // keel's records of streams and events made elsewhere (adopt_stream,
  // adopt_event), by ACL handle: made on first adoption, kept until forgotten
  // or the device dies, so every adoption of one handle shares one record.
  std::mutex adopted_m_;
  std::unordered_map<acl::stream_handle, std::unique_ptr<detail::stream_box>> adopted_streams_;
  std::unordered_map<acl::event_handle, std::unique_ptr<detail::event_box>> adopted_events_;
  // Buffers released in stream order: each waits for an event recorded where
  // it was released; freed by the next call that collects (allocate, release,
  // synchronize). Spare events are reused for later releases.
  std::mutex releases_m_;
  std::vector<detail::deferred_release> releases_;
  std::vector<acl::event_handle> spare_events_;
  // Host callables captured into a capture keel did not begin (an adopted
  // stream's, begun through ACL directly): no model record owns them.
  std::mutex unowned_m_;
  std::vector<std::shared_ptr<void>> unowned_calls_;
  std::mutex captures_m_;
  std::vector<detail::stream_box*> captures_;  // streams that began a capture still in progress
  std::atomic<std::size_t> capture_count_{0};  // captures_.size(), read without the lock
  // Destructions a host callable asked for of its own stream: each runs on
  // a thread of its own (the callable's reporting thread cannot wait for
  // its stream), joined here at the latest when the device goes.
  std::mutex deferred_m_;
  std::vector<std::thread> deferred_destroys_;
};

/**
 * @brief What an ACL "kernel" receives: the stream's native handle and the
 * function table. On ACL a launch body runs on the host when it is issued and
 * enqueues ACL work (an aclnnXxx phase two) on `stream()`; that work is what
 * capture records and what an update replaces.
 */
class launch_context {
 public:
  /// The context of a launch on @p stream of @p dev.
  launch_context(device& dev, stream_handle stream) noexcept : dev_(&dev), stream_(stream) {}
  /// The device the launch runs on.
  device& get_device() const noexcept { return *dev_; }
  /// The ACL function table, with the device current on this thread.
  const api& functions() const noexcept { return dev_->functions(); }
  /// The aclrtStream the body enqueues its work on.
  stream_handle stream() const noexcept { return stream_; }
  /// Throws keel::error for a non-zero ACL @p code returned by @p function.
  void check(status code, const char* function) const { dev_->check(code, function); }

 private:
  device* dev_;
  stream_handle stream_;
};

/**
 * @brief The ACL backend of the runtime templates: every call is a static
 * member that goes through the device's function table; native handles are
 * pointers to small records keel keeps beside ACL's handle (the device, the
 * flags and capture books ACL cannot be asked for), so a call costs one
 * pointer hop and no lookup. A raw aclrtStream / aclrtEvent made elsewhere
 * gets its record from keel::acl::adopt_stream / adopt_event: a non-owning
 * record the device keeps per ACL handle (until device::forget_stream /
 * forget_event); keel never destroys the handle, and every call works on it,
 * capture included. ACL cannot be asked an event's flags: the adopter says them.
 *
 * Ownership: as the runtime requirement says. Thread safety: every call is as
 * thread-safe as ACL's. Exceptions: keel::error with acl_category() codes
 * (equivalent to keel's conditions, see keel::acl::condition) and ACL's own
 * message; not_supported for a function the loaded CANN lacks.
 *
 * Threads: CANN needs aclrtSetDevice on every thread that calls the runtime;
 * every entry here makes the stream's (event's, model's) device current on
 * the calling thread first, once per thread (device::make_current), so keel's
 * handles work from any thread. device::functions() does the same for code
 * calling the table directly. keel knows only what it set: a thread that
 * switches itself to another device through ACL calls make_current() again.
 * A thread's capture mode (aclmdlRICaptureThreadExchangeMode) is
 * thread_capture_mode_scope.
 *
 * Errors: a status with its ACL code and ACL's text; a rule broken inside an
 * aclnn launch carries the runtime's own status, not only 361001 (run_on).
 *
 * Differences from the host backend:
 * - launch_kernel runs the body when issued (it enqueues ACL work).
 * - launch_host is aclrtLaunchCallback (ACL_CALLBACK_BLOCK): the first one on
 *   a stream starts a reporting thread for it (aclrtSubscribeReport, then
 *   aclrtProcessReport in a loop; the thread makes the device current on
 *   itself first), which runs the stream's callables in order. The stream's
 *   destruction unsubscribes and joins it; so does device::forget_stream for
 *   an adopted stream, and the device's destruction for adopted streams still
 *   recorded. A callable that throws puts the stream in an error state, as on
 *   the host backend: later host callables of the stream are skipped, query()
 *   and synchronize() throw task_failed with the exception's text, and
 *   synchronize() clears it. ACL work (kernels, copies, events) issued after
 *   the failure still runs: ACL cannot skip it. A callable captured into a
 *   model belongs to the model (freed when the model is destroyed and its
 *   executions have been synchronized; the capturing stream may go first)
 *   and runs, on every execution, on the reporting thread of the executing
 *   stream (execute() starts one if the model holds host callables), whose
 *   error state its failure sets. (Captured into a capture keel did not
 *   begin, it lives as long as the device.)
 * - task_count, group_count and task_group::size come from keel's books: keel
 *   issues every task itself during a capture it began, and counts them as
 *   the host backend does (a launch, copy, external-event operation, model
 *   execution or task group is one task of the model; a launch inside a group
 *   counts in the group). A launch counts once however many ACL tasks its
 *   body enqueues, and work issued straight through ACL during the capture
 *   (not through keel) is not counted. (Newer CANN lists a model's tasks with
 *   aclmdlRIGetStreams / aclmdlRIGetTasksByStream, hicann/runtime
 *   docs/zh/api_ref/15_model_running_instance_management.md; keel's subset
 *   does not use them yet.)
 * - capture end checks keel's rules before aclmdlRICaptureEnd (a task group
 *   still open; a stream that joined the capture by an event wait and issued
 *   work no stream of the capture waited for), from keel's own books as the
 *   host backend keeps them: CANN would end the capture and destroy its model
 *   (ACL_ERROR_STREAM_TASK_GROUP_STATUS, ACL_ERROR_RT_STREAM_UNJOINED), while
 *   capture_scope::end promises the capture stays, to be joined or discarded.
 * - group_abort and update_abort end the group / update (ACL cannot cancel);
 *   an aborted update that matched the group is therefore applied.
 * - a buffer's release does not wait: it records an event on its stream, and
 *   the memory is freed by a later allocate, release or synchronize on the
 *   device that finds the event complete (aclrtQueryEventStatus), or when the
 *   device is destroyed; with no later call the memory waits for one.
 *   Released during a capture, it lives as long as the model. (The host
 *   backend frees from the stream's own worker instead.)
 */
struct backend {
  // The operations of the runtime backend requirement (keel/runtime/backend.hpp),
  // called by keel's runtime templates, not by users: documented there.
  /// @cond KEEL_BACKEND_OPERATIONS
  using device_type = device;
  using stream_handle = detail::stream_box*;
  using event_handle = detail::event_box*;
  using model_handle = detail::model_box*;
  using group_handle = detail::group_box*;
  using buffer_handle = detail::block*;
  using launch_context = keel::acl::launch_context;

  static constexpr const char* name = "acl";
  // The capability query keel::abandon_restores_group_v: ACL applies an update
  // that matched the group when it ends, and cannot cancel it.
  static constexpr bool abandon_restores_group = false;

  // ---- streams -------------------------------------------------------------

  static stream_handle create_stream(device_type& dev) {
    auto box = std::make_unique<detail::stream_box>();
    dev.check(entered(dev).aclrtCreateStream(&box->native), "aclrtCreateStream");
    box->dev = &dev;
    box->id = dev.next_stream_id_.fetch_add(1, std::memory_order_relaxed);
    return box.release();
  }

  static void destroy_stream(stream_handle s) noexcept {
    if (s->adopted) return;  // its maker destroys it; the record stays with the device
    if (on_own_reporting_thread(s)) return defer_destroy(s);
    const api& a = entered(*s->dev);
    capture_discard(s);
    leave_lane(s);
    if (a.aclrtSynchronizeStream.get() != nullptr) a.aclrtSynchronizeStream.get()(s->native);
    stop_host_callbacks(s);
    const status st = a.aclrtDestroyStream.get() != nullptr ? a.aclrtDestroyStream.get()(s->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclrtDestroyStream", "the stream could not be destroyed");
    s->destroyed.store(true, std::memory_order_release);
    release_stream(s);
  }

  /** Keeps keel's record of the stream (not the ACL stream) alive past destroy_stream (see the host backend). */
  static void retain_stream(stream_handle s) noexcept {
    if (!s->adopted) s->refs.fetch_add(1, std::memory_order_relaxed);
  }
  static void release_stream(stream_handle s) noexcept {
    if (!s->adopted && s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
  }

  /**
   * keel's record for a stream made elsewhere (another framework's current
   * stream): non-owning, made on first adoption and shared by later ones.
   * destroy_stream leaves the ACL stream alone. Prefer keel::acl::adopt_stream.
   */
  static stream_handle adopt_stream(device_type& dev, acl::stream_handle native) {
    if (native == nullptr) throw_error(keel::errc::null_parameter, "keel::acl::adopt_stream", "null aclrtStream");
    std::lock_guard<std::mutex> lock(dev.adopted_m_);
    auto& slot = dev.adopted_streams_[native];
    if (!slot) {
      auto box = std::make_unique<detail::stream_box>();
      box->native = native;
      box->dev = &dev;
      box->id = dev.next_stream_id_.fetch_add(1, std::memory_order_relaxed);
      box->adopted = true;
      slot = std::move(box);
    }
    return slot.get();
  }

  /** The event form of adopt_stream; ACL cannot be asked an event's flags, so the caller says them. */
  static event_handle adopt_event(device_type& dev, acl::event_handle native, keel::event_flags flags) {
    if (native == nullptr) throw_error(keel::errc::null_parameter, "keel::acl::adopt_event", "null aclrtEvent");
    std::lock_guard<std::mutex> lock(dev.adopted_m_);
    auto& slot = dev.adopted_events_[native];
    if (!slot) {
      auto box = std::make_unique<detail::event_box>();
      box->native = native;
      box->dev = &dev;
      box->flags = flags;
      box->adopted = true;
      slot = std::move(box);
    } else if (slot->flags != flags) {  // other threads may be reading them: never changed
      throw_error(keel::errc::invalid_parameter, "keel::acl::adopt_event",
                  "the event was adopted before with other flags (forget_event it first)");
    }
    return slot.get();
  }

  static device_type& device_of(stream_handle s) noexcept { return *s->dev; }
  static std::uint64_t id_of(stream_handle s) noexcept { return s->id; }

  static void synchronize(stream_handle s) {
    s->dev->check(entered(*s->dev).aclrtSynchronizeStream(s->native), "aclrtSynchronizeStream");
    release_keeps(s);
    collect_releases(*s->dev);
    check_host_calls(s, true);
  }

  /** aclrtSynchronizeStreamWithTimeout (ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, errc::timeout, when it passes). */
  static void synchronize_for(stream_handle s, std::chrono::microseconds timeout) {
    s->dev->check(entered(*s->dev).aclrtSynchronizeStreamWithTimeout(s->native, timeout_ms(timeout)),
                  "aclrtSynchronizeStreamWithTimeout");
    release_keeps(s);
    collect_releases(*s->dev);
    check_host_calls(s, true);
  }

  // keel's wait budget as ACL's int32 milliseconds: rounded up, at least 1
  // (ACL's timeouts have millisecond grain; 0 is not a bound in every call).
  static std::int32_t timeout_ms(std::chrono::microseconds timeout) noexcept {
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
    return static_cast<std::int32_t>(std::clamp<decltype(ms)>(ms, 1, INT32_MAX));
  }

  static bool query(stream_handle s) {
    stream_status st = stream_status::not_ready;
    s->dev->check(entered(*s->dev).aclrtStreamQuery(s->native, &st), "aclrtStreamQuery");
    check_host_calls(s, false);
    return st == stream_status::complete;
  }

  static void synchronize_device(device_type& dev) {
    dev.check(entered(dev).aclrtSynchronizeDevice(), "aclrtSynchronizeDevice");
    collect_releases(dev);
  }
  /** aclrtSynchronizeDeviceWithTimeout. */
  static void synchronize_device_for(device_type& dev, std::chrono::microseconds timeout) {
    dev.check(entered(dev).aclrtSynchronizeDeviceWithTimeout(timeout_ms(timeout)), "aclrtSynchronizeDeviceWithTimeout");
    collect_releases(dev);
  }

  /**
   * f() runs on the stream's reporting thread when the stream reaches it, and
   * the stream's later work waits for it: aclrtLaunchCallback with
   * ACL_CALLBACK_BLOCK (CANN runtime API reference, aclrtLaunchCallback:
   * https://www.hiascend.com/document/detail/zh/canncommercial/latest/API/runtimeapi/aclcppdevg_03_0126.html;
   * aclrtSubscribeReport 03_0125: "the callbacks the stream delivers run in
   * the bound thread", aclrtProcessReport, aclrtUnSubscribeReport 03_0128).
   * Captured, the callable belongs to the model (its keep list) and runs on
   * every execution, on the reporting thread of the executing stream.
   */
  template <class F>
  static void launch_host(stream_handle s, F&& f) {
    device& dev = *s->dev;
    const api& a = entered(dev);
    (void)host_callbacks_of(s);
    // Captured, the callable runs on every replay until the model is
    // destroyed: the model owns it (the capture's keep list, moved into the
    // model at capture end), not the stream that captured it, which may go
    // first. A capture keel did not begin has no model record: the device
    // keeps the callable until it is destroyed.
    const bool captured = capture_status(s).state != capture_state::none;
    const stream_handle origin = captured ? capture_origin(s) : nullptr;
    auto call = std::make_unique<detail::host_call_of<std::decay_t<F>>>(std::forward<F>(f));
    call->once = !captured;
    std::shared_ptr<void> owner;
    if (captured) {
      owner = std::shared_ptr<detail::host_call>(std::move(call));
      if (origin != nullptr) {
        std::lock_guard<std::mutex> lock(origin->m);
        origin->keep.reserve(origin->keep.size() + 1);
      } else {
        std::lock_guard<std::mutex> lock(dev.unowned_m_);
        dev.unowned_calls_.reserve(dev.unowned_calls_.size() + 1);
      }
    }
    void* user = captured ? owner.get() : static_cast<void*>(call.get());
    dev.check(a.aclrtLaunchCallback(&run_host_call, user, callback_block::block, s->native), "aclrtLaunchCallback");
    if (!captured) {
      (void)call.release();  // enqueued: run_host_call deletes it (it may have already)
    } else if (origin != nullptr) {
      std::lock_guard<std::mutex> lock(origin->m);
      origin->keep.push_back(std::move(owner));  // reserved above: cannot throw
      origin->capture_host_calls = true;
    } else {
      std::lock_guard<std::mutex> lock(dev.unowned_m_);
      dev.unowned_calls_.push_back(std::move(owner));
    }
    count_task(s, false);  // a host callable is a task of the model, as on the host backend
  }

  /** Runs f(ctx) now: the body enqueues ACL work on ctx.stream(). */
  template <class F>
  static void launch_kernel(stream_handle s, kernel_kind, F&& f) {
    launch_context ctx(*s->dev, s->native);
    std::forward<F>(f)(ctx);
    count_task(s, true);
  }

  static void copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind,
                         std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    const stream_handle keeper = keeper_of(s);
    {
      std::lock_guard<std::mutex> lock(keeper->m);
      keeper->keep.reserve(keeper->keep.size() + 2);
    }
    if (bytes != 0)
      s->dev->check(entered(*s->dev).aclrtMemcpyAsync(dst, bytes, src, bytes, memcpy_kind_of(kind), s->native),
                    "aclrtMemcpyAsync");
    {
      std::lock_guard<std::mutex> lock(keeper->m);
      if (keep_dst) keeper->keep.push_back(std::move(keep_dst));
      if (keep_src) keeper->keep.push_back(std::move(keep_src));
    }
    count_task(s, false);
  }

  /** A blocking copy after the stream's earlier work (aclrtMemcpy alone is not ordered with streams). */
  static void copy(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
    synchronize(s);
    if (bytes != 0)
      s->dev->check(entered(*s->dev).aclrtMemcpy(dst, bytes, src, bytes, memcpy_kind_of(kind)), "aclrtMemcpy");
  }

  static capture_info capture_status(stream_handle s) {
    acl::capture_status st = acl::capture_status::none;
    model_handle_native model = nullptr;
    s->dev->check(entered(*s->dev).aclmdlRICaptureGetInfo(s->native, &st, &model), "aclmdlRICaptureGetInfo");
    capture_info info;
    info.state = st == acl::capture_status::active        ? capture_state::active
                 : st == acl::capture_status::invalidated ? capture_state::invalidated
                                                          : capture_state::none;
    info.capture_id = reinterpret_cast<std::uintptr_t>(model);
    std::lock_guard<std::mutex> lock(s->m);
    info.mode = s->mode;
    info.group_open = s->group_open;
    info.updating = s->updating;
    return info;
  }

  static capture_info thread_capture_status(device_type& dev) {
    stream_handle mine = nullptr;
    {
      std::lock_guard<std::mutex> lock(dev.captures_m_);
      for (auto* s : dev.captures_) {
        std::lock_guard<std::mutex> stream_lock(s->m);
        if (s->capture_thread == std::this_thread::get_id()) mine = s;
      }
    }
    return mine != nullptr ? capture_status(mine) : capture_info{};
  }

  // ---- events --------------------------------------------------------------

  static event_handle create_event(device_type& dev, keel::event_flags flags) {
    auto box = std::make_unique<detail::event_box>();
    // ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE, ACL_EVENT_EXTERNAL (07_event_management.md).
    const std::uint32_t flag = flags == keel::event_flags::external ? acl::event_flags::external
                               : flags == keel::event_flags::timing ? acl::event_flags::time_line
                                                              : acl::event_flags::sync;
    dev.check(entered(dev).aclrtCreateEventWithFlag(&box->native, flag), "aclrtCreateEventWithFlag");
    box->dev = &dev;
    box->flags = flags;
    return box.release();
  }
  static void destroy_event(event_handle e) noexcept {
    if (e->adopted) return;  // its maker destroys it; the record stays with the device
    const auto destroy = entered(*e->dev).aclrtDestroyEvent.get();
    const status st = destroy != nullptr ? destroy(e->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclrtDestroyEvent", "the event could not be destroyed");
    delete e;
  }
  static keel::event_flags flags_of(event_handle e) noexcept { return e->flags; }

  static void record(event_handle e, stream_handle s) {
    const api& a = entered(*s->dev);
    if (e->flags == keel::event_flags::external) {
      s->dev->check(a.aclrtRecordEventWithFlag(e->native, s->native, record_flags::external),
                    "aclrtRecordEventWithFlag");
      count_task(s, false);  // an external signal is a task of the model; a plain record is an edge
    } else {
      s->dev->check(a.aclrtRecordEvent(e->native, s->native), "aclrtRecordEvent");
      note_record(e, s);
    }
  }
  static void wait(stream_handle s, event_handle e) {
    const api& a = entered(*s->dev);
    if (e->flags == keel::event_flags::external) {  // timeout must be 0 with the external flag
      s->dev->check(a.aclrtStreamWaitEventWithFlag(s->native, e->native, 0, wait_flags::external),
                    "aclrtStreamWaitEventWithFlag");
      count_task(s, false);
    } else {
      s->dev->check(a.aclrtStreamWaitEvent(s->native, e->native), "aclrtStreamWaitEvent");
      note_wait(s, e);
    }
  }
  /**
   * aclrtStreamWaitEventWithTimeout: the wait fails on the stream if the
   * record has not come in time. External events have no bounded wait in ACL
   * (their flag form takes timeout 0): refused. Not capturable in keel.
   */
  static void wait_for(stream_handle s, event_handle e, std::chrono::microseconds timeout) {
    static constexpr const char* api_name = "keel::stream::wait";
    if (e->flags == keel::event_flags::external)
      throw_error(keel::errc::not_supported, api_name,
                  "ACL has no bounded wait on an external event (aclrtStreamWaitEventWithFlag takes timeout 0)");
    if (capture_origin(s) != nullptr)
      throw_error(keel::errc::capture_violation, api_name,
                  "a wait with a timeout cannot be captured; wait without a timeout");
    s->dev->check(entered(*s->dev).aclrtStreamWaitEventWithTimeout(s->native, e->native, timeout_ms(timeout)),
                  "aclrtStreamWaitEventWithTimeout");
  }
  static void reset(stream_handle s, event_handle e) {
    s->dev->check(entered(*s->dev).aclrtResetEvent(e->native, s->native), "aclrtResetEvent");
    count_task(s, false);
  }
  static bool query(event_handle e) {
    event_recorded_status st = event_recorded_status::not_ready;
    e->dev->check(entered(*e->dev).aclrtQueryEventStatus(e->native, &st), "aclrtQueryEventStatus");
    return st == event_recorded_status::complete;
  }
  static void synchronize(event_handle e) {
    e->dev->check(entered(*e->dev).aclrtSynchronizeEvent(e->native), "aclrtSynchronizeEvent");
  }
  /** aclrtSynchronizeEventWithTimeout (ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, errc::timeout). */
  static void synchronize_for(event_handle e, std::chrono::microseconds timeout) {
    e->dev->check(entered(*e->dev).aclrtSynchronizeEventWithTimeout(e->native, timeout_ms(timeout)),
                  "aclrtSynchronizeEventWithTimeout");
  }
  static float elapsed_ms(event_handle start, event_handle end) {
    float ms = 0;
    start->dev->check(entered(*start->dev).aclrtEventElapsedTime(&ms, start->native, end->native),
                      "aclrtEventElapsedTime");
    return ms;
  }

  // ---- capture and models ----------------------------------------------------

  static void capture_begin(stream_handle s, keel::capture_mode mode) {
    device& dev = *s->dev;
    {
      std::lock_guard<std::mutex> lock(dev.captures_m_);
      dev.captures_.reserve(dev.captures_.size() + 1);
    }
    auto alive = std::make_shared<std::atomic<bool>>(true);
    const acl::capture_mode native = detail::native_mode(mode);
    dev.check(entered(dev).aclmdlRICaptureBegin(s->native, native), "aclmdlRICaptureBegin");
    // ACL's model of this capture: how work on a forked stream finds the books.
    acl::capture_status st = acl::capture_status::none;
    model_handle_native model = nullptr;
    const auto info = entered(dev).aclmdlRICaptureGetInfo.get();
    if (info == nullptr || info(s->native, &st, &model) != 0) model = nullptr;
    {
      std::lock_guard<std::mutex> lock(s->m);
      s->mode = mode;
      s->capture_alive = std::move(alive);
      s->capture_model = model;
      s->capture_groups = 0;
      s->capture_tasks = 0;
      s->capture_thread = std::this_thread::get_id();
    }
    std::lock_guard<std::mutex> lock(dev.captures_m_);
    dev.captures_.push_back(s);
    dev.capture_count_.fetch_add(1, std::memory_order_release);
  }

  static model_handle capture_end(stream_handle s) {
    refuse_destroyed(s, "keel::capture_scope::end");
    device& dev = *s->dev;
    check_capture_may_end(s);
    auto box = std::make_unique<detail::model_box>();
    model_handle_native native = nullptr;
    const status st = entered(dev).aclmdlRICaptureEnd(s->native, &native);
    if (st != 0) {
      const std::string recent = detail::recent_message(entered(dev).aclGetRecentErrMsg);
      if (!still_capturing(s)) forget_capture(s, nullptr);  // ACL ended (discarded) the capture
      detail::throw_status(st, "aclmdlRICaptureEnd", recent);
    }
    box->native = native;
    box->dev = &dev;
    forget_capture(s, box.get());
    return box.release();
  }

  static void capture_discard(stream_handle s) noexcept {
    if (s->destroyed.load(std::memory_order_acquire)) return;  // destroy_stream discarded it
    if (!still_capturing(s)) return forget_capture(s, nullptr);
    const api& a = entered(*s->dev);
    {
      std::lock_guard<std::mutex> lock(s->m);
      if (s->group_open && a.aclmdlRICaptureTaskGrpEnd.get() != nullptr) {
        task_group_handle g = nullptr;
        a.aclmdlRICaptureTaskGrpEnd.get()(s->native, &g);
        s->group_open = false;
      }
    }
    model_handle_native native = nullptr;
    if (a.aclmdlRICaptureEnd.get() != nullptr && a.aclmdlRICaptureEnd.get()(s->native, &native) == 0 &&
        native != nullptr && a.aclmdlRIDestroy.get() != nullptr)
      a.aclmdlRIDestroy.get()(native);
    forget_capture(s, nullptr);
  }

  static void destroy_model(model_handle m) noexcept {
    const auto destroy = entered(*m->dev).aclmdlRIDestroy.get();
    const status st = destroy != nullptr ? destroy(m->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclmdlRIDestroy", "the model could not be destroyed");
    if (m->alive) m->alive->store(false, std::memory_order_release);
    delete m;
  }

  /**
   * Runs the model on s. Its host callables run on s's reporting thread
   * (started here if s has none) and put s in its error state if they throw:
   * the executing stream is where the model's tasks run (aclmdlRIExecuteAsync),
   * and the thread subscribed to a stream runs the callbacks it delivers
   * (aclrtSubscribeReport). CANN does not say more for a replayed callback;
   * keel's emulation does this. An adopted s another thread already
   * subscribed to cannot get keel's reporting thread: ACL's status
   * (ACL_ERROR_REPEAT_SUBSCRIBE) is thrown, as launch_host does.
   */
  static void execute(model_handle m, stream_handle s) {
    device& dev = *s->dev;
    const api& a = entered(dev);
    if (m->host_calls) (void)host_callbacks_of(s);
    const stream_handle keeper = keeper_of(s);
    {
      std::lock_guard<std::mutex> lock(keeper->m);
      keeper->keep.reserve(keeper->keep.size() + m->keep.size());
    }
    dev.check(a.aclmdlRIExecuteAsync(m->native, s->native), "aclmdlRIExecuteAsync");
    {
      // The replay uses the model's memory until the stream passes it (or,
      // captured, as long as the outer model lives).
      std::lock_guard<std::mutex> lock(keeper->m);
      keeper->keep.insert(keeper->keep.end(), m->keep.begin(), m->keep.end());  // reserved above: cannot throw
    }
    if (m->host_calls && dev.capture_count_.load(std::memory_order_acquire) != 0) {
      if (const stream_handle origin = capture_origin(s)) {  // captured: the outer model replays them too
        std::lock_guard<std::mutex> lock(origin->m);
        origin->capture_host_calls = true;
      }
    }
    count_task(s, false);
  }

  static std::size_t task_count(model_handle m) noexcept { return m->tasks; }
  static std::size_t group_count(model_handle m) noexcept { return m->groups; }

  // ---- task groups and updates -----------------------------------------------

  static void group_begin(stream_handle s) {
    s->dev->check(entered(*s->dev).aclmdlRICaptureTaskGrpBegin(s->native), "aclmdlRICaptureTaskGrpBegin");
    count_task(s, false);  // the group is one task of the model
    std::lock_guard<std::mutex> lock(s->m);
    s->group_open = true;
    s->group_tasks = 0;
  }

  static group_handle group_end(stream_handle s) {
    refuse_destroyed(s, "keel::task_group_scope::end");
    auto box = std::make_unique<detail::group_box>();
    s->dev->check(entered(*s->dev).aclmdlRICaptureTaskGrpEnd(s->native, &box->native), "aclmdlRICaptureTaskGrpEnd");
    // The group belongs to the capture s takes part in, which s may have
    // joined by an event wait rather than begun: its books are the origin's.
    const stream_handle origin = capture_origin(s);
    {
      std::lock_guard<std::mutex> lock(s->m);
      s->group_open = false;
      box->size = s->group_tasks;
    }
    if (origin != nullptr) {
      std::lock_guard<std::mutex> lock(origin->m);
      ++origin->capture_groups;
      box->model_alive = origin->capture_alive;
    }
    return box.release();
  }

  static void group_abort(stream_handle s) noexcept {
    if (s->destroyed.load(std::memory_order_acquire)) return;  // its capture went with the stream
    task_group_handle g = nullptr;
    const auto end = entered(*s->dev).aclmdlRICaptureTaskGrpEnd.get();
    if (end != nullptr) end(s->native, &g);  // ACL cannot cancel a group: end it and drop the handle
    std::lock_guard<std::mutex> lock(s->m);
    s->group_open = false;
  }

  static void destroy_group(group_handle g) noexcept { delete g; }  // ACL's group belongs to its model

  static std::size_t group_size(group_handle g) noexcept { return g->size; }
  static bool group_model_alive(group_handle g) noexcept {
    return g->model_alive && g->model_alive->load(std::memory_order_acquire);
  }

  static void update_begin(stream_handle s, group_handle g) {
    s->dev->check(entered(*s->dev).aclmdlRICaptureTaskUpdateBegin(s->native, g->native),
                  "aclmdlRICaptureTaskUpdateBegin");
    std::lock_guard<std::mutex> lock(s->m);
    s->updating = true;
  }
  static void update_end(stream_handle s) {
    refuse_destroyed(s, "keel::update_scope::end");
    const status st = entered(*s->dev).aclmdlRICaptureTaskUpdateEnd(s->native);
    {
      std::lock_guard<std::mutex> lock(s->m);
      s->updating = false;
    }
    s->dev->check(st, "aclmdlRICaptureTaskUpdateEnd");
  }
  static void update_abort(stream_handle s) noexcept {
    if (s->destroyed.load(std::memory_order_acquire)) return;
    const auto end = entered(*s->dev).aclmdlRICaptureTaskUpdateEnd.get();
    if (end != nullptr) end(s->native);
    std::lock_guard<std::mutex> lock(s->m);
    s->updating = false;
  }

  // ---- memory ----------------------------------------------------------------

  static buffer_handle allocate(stream_handle s, std::size_t bytes, memory_kind kind) {
    auto b = std::make_unique<detail::block>();
    device* dev = s->dev;
    collect_releases(*dev);  // memory whose streams passed its release goes back first
    void* p = nullptr;
    if (bytes != 0) {
      switch (kind) {
        case memory_kind::device:
          dev->check(entered(*dev).aclrtMalloc(&p, bytes, malloc_policy::huge_first), "aclrtMalloc");
          b->alloc =
              std::shared_ptr<void>(p, [dev](void* q) { report(entered(*dev).aclrtFree.get()(q), "aclrtFree"); });
          break;
        case memory_kind::pinned_host:
          dev->check(entered(*dev).aclrtMallocHost(&p, bytes), "aclrtMallocHost");
          b->alloc = std::shared_ptr<void>(
              p, [dev](void* q) { report(entered(*dev).aclrtFreeHost.get()(q), "aclrtFreeHost"); });
          break;
        case memory_kind::pageable_host:
          p = ::operator new(bytes, std::align_val_t{64});
          b->alloc = std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t{64}); });
          break;
      }
    }
    b->data = p;
    b->bytes = bytes;
    b->kind = kind;
    b->stream = s;
    return b.release();
  }

  /**
   * Releases in stream order without waiting: an event recorded on the stream
   * marks the release point, and the memory is freed by a later call that
   * finds the event complete (allocate, free_async, synchronize). Captured,
   * the memory lives as long as the model (the stream's owners pass to it).
   * If no event can be recorded, the release waits for the stream.
   */
  static void free_async(buffer_handle b) noexcept {
    stream_handle s = b->stream;
    device& dev = *s->dev;
    try {
      if (b->alloc) {
        if (capture_status(s).state != capture_state::none) {
          const stream_handle keeper = keeper_of(s);
          std::lock_guard<std::mutex> lock(keeper->m);
          keeper->keep.push_back(std::move(b->alloc));
        } else if (!defer_release(s, b->alloc)) {
          if (entered(dev).aclrtSynchronizeStream(s->native) != 0) {  // cannot tell when the stream passes: keep it
            std::lock_guard<std::mutex> lock(s->m);
            s->keep.push_back(std::move(b->alloc));
          }
        }
      }
    } catch (...) {
      report_current_exception("keel::acl::backend::free_async");
    }
    delete b;  // drops the last owner unless deferred or kept by queued work
    collect_releases(dev);
  }
  static void* data(buffer_handle b) noexcept { return b->data; }
  static std::size_t size(buffer_handle b) noexcept { return b->bytes; }
  static std::shared_ptr<void> keep_alive(buffer_handle b) { return b->alloc; }

 private:
  using model_handle_native = acl::model_handle;
  using event_handle_native = acl::event_handle;

  // Every entry reaches ACL through here: the device is made current on the
  // calling thread first (device::make_current), whatever thread it is.
  static const api& entered(const device& dev) noexcept {
    dev.enter();
    return dev.api_;
  }

  // ---- host callables (launch_host) -------------------------------------------

  // How long one aclrtProcessReport waits: also how long a stream's
  // destruction may wait for its reporting thread to notice.
  static constexpr std::int32_t report_timeout_ms = 100;

  // The host callbacks of the stream whose reporting thread this is (null on
  // any other thread): set once by the reporting thread itself.
  static detail::host_callbacks*& reporting_for() noexcept {
    thread_local detail::host_callbacks* callbacks = nullptr;
    return callbacks;
  }

  // The aclrtCallback of every launch_host: runs the callable unless the
  // stream whose reporting thread runs it (the launching stream, or the
  // stream executing the model that captured it) is in its error state, and
  // records what it throws there. On a thread keel did not start (someone
  // else subscribed to the stream), a failure goes to keel's error handler.
  static void run_host_call(void* user) noexcept {
    auto* call = static_cast<detail::host_call*>(user);
    detail::host_callbacks* callbacks = reporting_for();
    bool skip = false;
    if (callbacks != nullptr) {
      std::lock_guard<std::mutex> lock(callbacks->m);
      skip = callbacks->failed;
    }
    if (!skip) {
      std::string failure;
      try {
        call->run();
      } catch (const std::exception& e) {
        failure = e.what();
      } catch (...) {
        failure = "a host callable threw a non-standard exception";
      }
      if (!failure.empty()) {
        if (callbacks != nullptr) {
          std::lock_guard<std::mutex> lock(callbacks->m);
          if (!callbacks->failed) callbacks->failure = std::move(failure);
          callbacks->failed = true;
        } else {
          report_error(make_error_code(keel::errc::task_failed), "keel::acl host callable",
                       ("a host callable threw on a thread keel does not report for: " + failure).c_str());
        }
      }
    }
    if (call->once) delete call;
  }

  // The stream's callbacks, starting its reporting thread on first use. Its
  // ACL calls need the device on the calling thread (entered), and the
  // reporting thread makes the device current on itself (device::enter) before
  // aclrtProcessReport, as every thread that calls the runtime must.
  static detail::host_callbacks& host_callbacks_of(stream_handle s) {
    device* dev = s->dev;
    const api& a = entered(*dev);
    std::lock_guard<std::mutex> lock(s->m);
    if (s->callbacks) return *s->callbacks;
    if (!a.aclrtProcessReport || !a.aclrtUnSubscribeReport)  // the reporting thread's loop, its end
      throw_error(keel::errc::not_supported, "aclrtProcessReport",
                  "host callbacks are not supported by this runtime (CANN too old?)");
    auto callbacks = std::make_unique<detail::host_callbacks>();
    detail::host_callbacks* cb = callbacks.get();
    cb->reporter = std::thread([cb, dev] {
      reporting_for() = cb;
      dev->enter();  // a runtime thread of keel's own
      while (!cb->subscribed.load(std::memory_order_acquire)) {
        if (cb->stop.load(std::memory_order_acquire)) return;
        std::this_thread::yield();
      }
      const auto process = dev->api_.aclrtProcessReport.get();
      while (!cb->stop.load(std::memory_order_acquire)) {
        const status st = process(report_timeout_ms);
        // 0: ran one; 100036 (ACL_ERROR_WAIT_CALLBACK_TIMEOUT): nothing came.
        // Anything else (no context, not subscribed) returns at once: back off.
        if (st != 0 && st != 100036) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    });
    cb->reporter_id = static_cast<std::uint64_t>(cb->reporter.native_handle());
    try {  // not_supported when the runtime lacks it
      dev->check(a.aclrtSubscribeReport(cb->reporter_id, s->native), "aclrtSubscribeReport");
    } catch (...) {
      cb->stop.store(true, std::memory_order_release);
      cb->reporter.join();
      throw;
    }
    cb->subscribed.store(true, std::memory_order_release);
    s->callbacks = std::move(callbacks);
    return *cb;
  }

  // Throws the failure of a host callable; `clear` ends the error state.
  static void check_host_calls(stream_handle s, bool clear) {
    detail::host_callbacks* cb = nullptr;
    {
      std::lock_guard<std::mutex> lock(s->m);
      cb = s->callbacks.get();
    }
    if (cb == nullptr) return;
    std::string failure;
    {
      std::lock_guard<std::mutex> lock(cb->m);
      if (!cb->failed) return;
      failure = cb->failure;
      if (clear) {
        cb->failed = false;
        cb->failure.clear();
      }
    }
    throw_error(keel::errc::task_failed, "keel::acl::stream (host callable)",
                "a host callable on stream #" + std::to_string(s->id) + " threw: " + failure);
  }

  // At the stream's destruction, after its work: a failure nobody saw goes to
  // the error handler; the reporting thread is unsubscribed and joined.
  static void stop_host_callbacks(stream_handle s) noexcept {
    std::unique_ptr<detail::host_callbacks> cb;
    {
      std::lock_guard<std::mutex> lock(s->m);
      cb = std::move(s->callbacks);
    }
    if (!cb) return;
    try {
      std::lock_guard<std::mutex> lock(cb->m);
      if (cb->failed) {
        const std::string text = "a host callable threw and the stream was destroyed before a synchronize: " + cb->failure;
        report_error(make_error_code(keel::errc::task_failed), "keel::acl::stream (host callable)", text.c_str());
      }
    } catch (...) {
      report_current_exception("keel::acl::backend::destroy_stream");
    }
    cb->stop.store(true, std::memory_order_release);
    const auto unsubscribe = entered(*s->dev).aclrtUnSubscribeReport.get();
    const status st = unsubscribe != nullptr ? unsubscribe(cb->reporter_id, s->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclrtUnSubscribeReport", "the reporting thread stays subscribed");
    cb->reporter.join();
  }

  static void report(status st, const char* function) noexcept {
    if (st != 0) report_error(make_status_code(st), function, "release failed");
  }

  static memcpy_kind memcpy_kind_of(copy_kind kind) noexcept {
    switch (kind) {
      case copy_kind::host_to_host: return memcpy_kind::host_to_host;
      case copy_kind::host_to_device: return memcpy_kind::host_to_device;
      case copy_kind::device_to_host: return memcpy_kind::device_to_host;
      case copy_kind::device_to_device: return memcpy_kind::device_to_device;
    }
    return memcpy_kind::automatic;
  }

  static void release_keeps(stream_handle s) noexcept {
    std::vector<std::shared_ptr<void>> done;
    {
      std::lock_guard<std::mutex> lock(s->m);
      done.swap(s->keep);
    }
  }  // released here, outside the lock

  // keel's task books during a capture keel began: a task issued on s counts
  // in the model of the capture s takes part in (s began it, or joined it by
  // waiting on an event), or, a launch inside the group open on s, in the
  // group. One relaxed load when the device has no capture in progress.
  // Work issued straight through ACL (not through keel) is not counted.
  static void count_task(stream_handle s, bool launch) noexcept {
    if (s->dev->capture_count_.load(std::memory_order_acquire) == 0) return;
    if (launch) {
      std::lock_guard<std::mutex> lock(s->m);
      if (s->group_open) {
        ++s->group_tasks;
        return;
      }
    }
    const stream_handle origin = capture_origin(s);
    if (origin == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(origin->m);
      ++origin->capture_tasks;
    }
    if (origin == s) return;
    std::lock_guard<std::mutex> lock(s->dev->captures_m_);  // s is a lane of origin's capture
    if (s->lane_of != origin) {
      try {
        origin->lanes.push_back(s);
      } catch (...) {
        return;  // out of memory: the join check cannot see this lane
      }
      s->lane_of = origin;
      s->lane_tasks = 0;
      s->lane_joined = 0;
    }
    ++s->lane_tasks;
  }

  // Whose keep list holds the owners of what work issued on s uses: during a
  // capture keel began, the capture's origin (its list moves into the model
  // at capture end), also for a stream that joined it by an event wait, whose
  // own list goes at its next synchronize; otherwise s.
  static stream_handle keeper_of(stream_handle s) noexcept {
    const stream_handle origin = capture_origin(s);
    return origin != nullptr ? origin : s;
  }

  // The join rule, checked by keel before ACL's capture end: CANN's
  // aclmdlRICaptureEnd refuses a capture with a task group still open
  // (ACL_ERROR_STREAM_TASK_GROUP_STATUS) or a forked stream not joined back
  // to the origin stream (ACL_ERROR_RT_STREAM_UNJOINED, 107025; hicann/runtime
  // docs/02_dev_guide/04-02_跨流捕获.md: "否则会在结束捕获时触发报错"), and
  // then ends the capture and destroys its model (hicann/runtime
  // CaptureSession::StreamEndCapture, ClearCaptureModel). keel's rule (the
  // runtime's capture_scope::end and the host backend) leaves the capture
  // running, to be joined or discarded: so keel refuses first, from its
  // own books (the host backend's rule: every task a joined stream issued
  // must be waited for by a stream of the capture).
  static void check_capture_may_end(stream_handle s) {
    static constexpr const char* api = "keel::capture_scope::end";
    device& dev = *s->dev;
    if (dev.capture_count_.load(std::memory_order_acquire) == 0) return;
    std::lock_guard<std::mutex> lock(dev.captures_m_);
    if (std::find(dev.captures_.begin(), dev.captures_.end(), s) == dev.captures_.end()) return;  // ACL says why
    {
      std::lock_guard<std::mutex> stream_lock(s->m);
      if (s->group_open)
        throw_error(keel::errc::capture_violation, api,
                    "a task group is still open on stream #" + std::to_string(s->id) + ", which began the capture");
    }
    for (const stream_handle lane : s->lanes) {
      {
        std::lock_guard<std::mutex> lane_lock(lane->m);
        if (lane->group_open)
          throw_error(keel::errc::capture_violation, api,
                      "a task group is still open on stream #" + std::to_string(lane->id) +
                          ", which joined the capture of stream #" + std::to_string(s->id));
      }
      if (lane->lane_joined < lane->lane_tasks)
        throw_error(keel::errc::capture_violation, api,
                    "stream #" + std::to_string(lane->id) + " forked from the capture of stream #" +
                        std::to_string(s->id) + " and has work the capturing stream never waited for: " +
                        "record an event on it and wait on that event here (" +
                        std::to_string(lane->lane_tasks - lane->lane_joined) + " of its " +
                        std::to_string(lane->lane_tasks) + " tasks)");
    }
  }

  // A plain event recorded on s: if s takes part in a capture keel began,
  // remember where, so a wait on it can join s's work (note_wait).
  static void note_record(event_handle e, stream_handle s) noexcept {
    device& dev = *s->dev;
    if (dev.capture_count_.load(std::memory_order_acquire) == 0) return;
    const stream_handle origin = capture_origin(s);
    std::lock_guard<std::mutex> lock(dev.captures_m_);
    if (origin == nullptr ||
        std::find(dev.captures_.begin(), dev.captures_.end(), origin) == dev.captures_.end()) {
      e->recorded_in.reset();
      e->recorded_on = nullptr;
      return;
    }
    {
      std::lock_guard<std::mutex> origin_lock(origin->m);
      e->recorded_in = origin->capture_alive;
    }
    e->recorded_on = s;
    e->recorded_on_id = s->id;
    e->recorded_at = s->lane_of == origin ? s->lane_tasks : 0;
  }

  // s waited on e: if e was recorded in the capture s takes part in, on a
  // lane of it, the lane's work up to the record is joined.
  static void note_wait(stream_handle s, event_handle e) noexcept {
    device& dev = *s->dev;
    if (dev.capture_count_.load(std::memory_order_acquire) == 0) return;
    const stream_handle origin = capture_origin(s);
    if (origin == nullptr) return;
    std::lock_guard<std::mutex> lock(dev.captures_m_);
    if (!e->recorded_in || e->recorded_on == s) return;
    if (std::find(dev.captures_.begin(), dev.captures_.end(), origin) == dev.captures_.end()) return;
    {
      std::lock_guard<std::mutex> origin_lock(origin->m);
      if (e->recorded_in != origin->capture_alive) return;  // recorded in another capture
    }
    // The recording stream is looked up among the live lanes before use (it
    // may have been destroyed since; its id tells a new stream at its address).
    const auto lane = std::find(origin->lanes.begin(), origin->lanes.end(), e->recorded_on);
    if (lane == origin->lanes.end() || (*lane)->id != e->recorded_on_id) return;
    (*lane)->lane_joined = std::max((*lane)->lane_joined, e->recorded_at);
  }

  // The capture of origin s is over: its lanes leave it. Caller holds captures_m_.
  static void drop_lanes_locked(stream_handle s) noexcept {
    for (const stream_handle lane : s->lanes) {
      lane->lane_of = nullptr;
      lane->lane_tasks = 0;
      lane->lane_joined = 0;
    }
    s->lanes.clear();
  }

  // s goes away (destroyed, or its adopted record forgotten): it leaves the
  // capture it is a lane of.
  // Whether the calling thread is the one running s's host callables.
  static bool on_own_reporting_thread(stream_handle s) noexcept {
    std::lock_guard<std::mutex> lock(s->m);
    return s->callbacks && s->callbacks->reporter.get_id() == std::this_thread::get_id();
  }

  // A host callable destroyed its own stream: waiting for the stream there
  // would wait for the callable itself. The destruction runs on a thread of
  // its own once the callable has returned (reported, as on the host backend).
  static void defer_destroy(stream_handle s) noexcept {
    device& dev = *s->dev;
    report_error(make_error_code(keel::errc::would_deadlock), "keel::acl::destroy_stream",
                 "a host callable destroyed its own stream: the destruction is deferred until the stream has run "
                 "the work already issued");
    try {
      std::lock_guard<std::mutex> lock(dev.deferred_m_);
      dev.deferred_destroys_.emplace_back([s] { destroy_stream(s); });
    } catch (...) {
      report_current_exception("keel::acl::destroy_stream");  // no thread: the stream stays alive, unowned
    }
  }

  static void refuse_destroyed(stream_handle s, const char* api) {
    if (s->destroyed.load(std::memory_order_acquire))
      throw_error(keel::errc::invalid_handle, api, "the scope's stream #" + std::to_string(s->id) + " was destroyed");
  }

  static void leave_lane(stream_handle s) noexcept {
    std::lock_guard<std::mutex> lock(s->dev->captures_m_);
    if (s->lane_of != nullptr) {
      auto& lanes = s->lane_of->lanes;
      lanes.erase(std::remove(lanes.begin(), lanes.end(), s), lanes.end());
      s->lane_of = nullptr;
    }
  }

  // The stream that began the capture keel knows s to take part in: s itself,
  // or (s joined by waiting on an event) the origin whose ACL model s's
  // capture reports. Null when s is not in a capture keel began.
  static stream_handle capture_origin(stream_handle s) noexcept {
    device& dev = *s->dev;
    if (dev.capture_count_.load(std::memory_order_acquire) == 0) return nullptr;
    {
      std::lock_guard<std::mutex> lock(s->m);
      if (s->capture_alive) return s;
    }
    const auto info = entered(dev).aclmdlRICaptureGetInfo.get();
    acl::capture_status st = acl::capture_status::none;
    model_handle_native model = nullptr;
    if (info == nullptr || info(s->native, &st, &model) != 0 || st != acl::capture_status::active || model == nullptr)
      return nullptr;
    std::lock_guard<std::mutex> lock(dev.captures_m_);
    for (detail::stream_box* origin : dev.captures_) {
      std::lock_guard<std::mutex> origin_lock(origin->m);
      if (origin->capture_model == model) return origin;
    }
    return nullptr;
  }

  // Records a release point on s and queues alloc behind it; false if no
  // event could be had or recorded (the caller then waits for the stream).
  static bool defer_release(stream_handle s, std::shared_ptr<void>& alloc) noexcept {
    device& dev = *s->dev;
    const api& a = entered(dev);
    if (!a.aclrtRecordEvent || !a.aclrtQueryEventStatus) return false;
    event_handle_native e = nullptr;
    try {
      std::lock_guard<std::mutex> lock(dev.releases_m_);
      dev.releases_.reserve(dev.releases_.size() + 1);
      if (!dev.spare_events_.empty()) {
        e = dev.spare_events_.back();
        dev.spare_events_.pop_back();
      }
    } catch (...) {
      return false;
    }
    // ACL_EVENT_SYNC (07_event_management.md): a plain event, queried later.
    if (e == nullptr &&
        (!a.aclrtCreateEventWithFlag || a.aclrtCreateEventWithFlag.get()(&e, acl::event_flags::sync) != 0))
      return false;
    if (a.aclrtRecordEvent.get()(e, s->native) != 0) {
      if (a.aclrtDestroyEvent) a.aclrtDestroyEvent.get()(e);
      return false;
    }
    std::lock_guard<std::mutex> lock(dev.releases_m_);
    dev.releases_.push_back({e, s->native, std::move(alloc)});  // reserved above: cannot throw
    return true;
  }

  // Frees the released memory whose streams have passed the release point.
  // The memory is dropped outside the lock (its deleter calls ACL).
  friend class device;  // pending_releases() collects
  static void collect_releases(device& dev) noexcept {
    const auto query = entered(dev).aclrtQueryEventStatus.get();
    if (query == nullptr) return;
    std::vector<std::shared_ptr<void>> done;
    std::lock_guard<std::mutex> lock(dev.releases_m_);
    if (dev.releases_.empty()) return;
    try {
      done.reserve(dev.releases_.size());
      dev.spare_events_.reserve(dev.spare_events_.size() + dev.releases_.size());
    } catch (...) {
      return;
    }
    // One stream passes its release points in the order they were recorded:
    // after the first it has not passed, skip its later ones unasked.
    acl::stream_handle blocked[16];
    std::size_t n_blocked = 0;
    const auto is_blocked = [&](acl::stream_handle s) {
      return std::find(blocked, blocked + n_blocked, s) != blocked + n_blocked;
    };
    auto keep = dev.releases_.begin();
    for (auto it = dev.releases_.begin(); it != dev.releases_.end(); ++it) {
      event_recorded_status st = event_recorded_status::not_ready;
      const bool passed =
          !is_blocked(it->stream) && query(it->event, &st) == 0 && st == event_recorded_status::complete;
      if (!passed && n_blocked < std::size(blocked) && !is_blocked(it->stream)) blocked[n_blocked++] = it->stream;
      if (passed) {
        done.push_back(std::move(it->alloc));
        dev.spare_events_.push_back(it->event);
      } else {
        *keep++ = std::move(*it);
      }
    }
    dev.releases_.erase(keep, dev.releases_.end());
    // `done` frees after the lock is released (declared before the guard).
  }

  static bool still_capturing(stream_handle s) noexcept {
    const auto info = entered(*s->dev).aclmdlRICaptureGetInfo.get();
    if (info == nullptr) return false;
    acl::capture_status st = acl::capture_status::none;
    model_handle_native model = nullptr;
    return info(s->native, &st, &model) == 0 && st != acl::capture_status::none;
  }

  // The capture on s is over: hand its books to the model (or drop them).
  static void forget_capture(stream_handle s, model_handle m) noexcept {
    device& dev = *s->dev;
    {
      std::lock_guard<std::mutex> lock(dev.captures_m_);
      drop_lanes_locked(s);
      const auto before = dev.captures_.size();
      dev.captures_.erase(std::remove(dev.captures_.begin(), dev.captures_.end(), s), dev.captures_.end());
      dev.capture_count_.fetch_sub(before - dev.captures_.size(), std::memory_order_release);
    }
    std::lock_guard<std::mutex> lock(s->m);
    if (m != nullptr) {
      m->groups = s->capture_groups;
      m->tasks = s->capture_tasks;
      m->alive = std::move(s->capture_alive);
      m->keep.swap(s->keep);  // the captured copies' owners (host callables too) live as long as the model
      m->host_calls = s->capture_host_calls;
    } else if (s->capture_alive) {
      s->capture_alive->store(false, std::memory_order_release);
    }
    s->capture_alive.reset();
    s->capture_model = nullptr;
    s->capture_groups = 0;
    s->capture_tasks = 0;
    s->capture_host_calls = false;
    s->group_open = false;
    s->capture_thread = std::thread::id();
  }
  /// @endcond
};

inline void device::finish_deferred_destroys() noexcept {
  for (;;) {
    std::vector<std::thread> pending;
    {
      std::lock_guard<std::mutex> lock(deferred_m_);
      pending.swap(deferred_destroys_);
    }
    if (pending.empty()) break;
    for (auto& t : pending) t.join();
  }
}

inline device::~device() {
  enter();
  finish_deferred_destroys();  // streams whose own host callables destroyed them
  // Adopted streams' reporting threads: unsubscribed and joined (a joinable
  // std::thread destroyed with its record would std::terminate).
  for (auto& adopted : adopted_streams_) backend::stop_host_callbacks(adopted.second.get());
  // Whatever is still released in stream order: wait for its stream, then free.
  const auto sync = api_.aclrtSynchronizeEvent.get();
  const auto destroy = api_.aclrtDestroyEvent.get();
  for (auto& r : releases_) {
    if (sync != nullptr) sync(r.event);
    r.alloc.reset();
    if (destroy != nullptr) destroy(r.event);
  }
  if (destroy != nullptr)
    for (acl::event_handle e : spare_events_) destroy(e);
}

inline void device::forget_stream(acl::stream_handle native) noexcept {
  std::unique_ptr<detail::stream_box> gone;
  {
    std::lock_guard<std::mutex> lock(adopted_m_);
    auto it = adopted_streams_.find(native);
    if (it == adopted_streams_.end()) return;
    gone = std::move(it->second);
    adopted_streams_.erase(it);
  }
  backend::stop_host_callbacks(gone.get());  // its reporting thread is unsubscribed and joined
  backend::leave_lane(gone.get());
  {
    std::lock_guard<std::mutex> lock(captures_m_);
    backend::drop_lanes_locked(gone.get());
    const auto before = captures_.size();
    captures_.erase(std::remove(captures_.begin(), captures_.end(), gone.get()), captures_.end());
    capture_count_.fetch_sub(before - captures_.size(), std::memory_order_release);
  }
}

inline std::size_t device::pending_releases() noexcept {
  backend::collect_releases(*this);
  std::lock_guard<std::mutex> lock(releases_m_);
  return releases_.size();
}

/**
 * @brief Sets the calling thread's capture mode with
 * aclmdlRICaptureThreadExchangeMode for the scope's lifetime, then restores
 * the previous one. A capture in global mode refuses calls unsafe during
 * capture (aclrtMemcpy, aclrtMemset, ...) from every thread, thread-local mode
 * from the capturing thread: a thread that must make one anyway switches
 * itself to relaxed (or, not capturing itself, to thread-local) first, as
 * hicann/runtime docs/zh/api_ref/15_model_running_instance_management.md
 * describes. Every thread starts in global mode.
 *
 * Ownership: the thread's mode, until destroyed; not copyable or movable, and
 * must end on the thread that made it. Exceptions: the constructor throws
 * keel::error (not_supported on a CANN without the function); the destructor
 * reports a failure to keel's error handler.
 *
 * @code
 * keel::acl::thread_capture_mode_scope relaxed{dev, keel::capture_mode::relaxed};
 * api.aclrtMemcpy(...);  // allowed on this thread while another captures
 * @endcode
 */
class [[nodiscard]] thread_capture_mode_scope {
 public:
  /// Sets this thread's capture mode to @p mode on @p dev (aclmdlRICaptureThreadExchangeMode) until the scope ends.
  thread_capture_mode_scope(device& dev, keel::capture_mode mode) : dev_(&dev) {
    acl::capture_mode exchanged = detail::native_mode(mode);
    dev.check(dev.functions().aclmdlRICaptureThreadExchangeMode(&exchanged), "aclmdlRICaptureThreadExchangeMode");
    previous_ = exchanged;
  }
  thread_capture_mode_scope(const thread_capture_mode_scope&) = delete;
  thread_capture_mode_scope& operator=(const thread_capture_mode_scope&) = delete;
  ~thread_capture_mode_scope() {
    acl::capture_mode restore = previous_;
    const auto exchange = dev_->functions().aclmdlRICaptureThreadExchangeMode.get();
    const status st = exchange != nullptr ? exchange(&restore) : 0;
    if (st != 0)
      report_error(make_status_code(st), "aclmdlRICaptureThreadExchangeMode",
                   "the thread's capture mode was not restored");
  }

  /** @brief The thread's mode before the scope. Throws: nothing. */
  keel::capture_mode previous() const noexcept {
    return previous_ == acl::capture_mode::global       ? keel::capture_mode::global
           : previous_ == acl::capture_mode::per_thread ? keel::capture_mode::thread_local_
                                                        : keel::capture_mode::relaxed;
  }

 private:
  device* dev_;
  acl::capture_mode previous_ = acl::capture_mode::global;
};

// The runtime handles on ACL, named like keel::host's.
KEEL_RUNTIME_HANDLE_ALIASES(backend)

/**
 * @brief A view of an aclrtStream made elsewhere (torch_npu's current stream,
 * a C library's): every stream operation works on it, capture included, and
 * keel never destroys it. keel keeps its books for the stream (id, owners of
 * queued memory, capture books) in a record the device makes on the first
 * adoption and shares with later ones; device::forget_stream drops it.
 * @throws keel::error null_parameter; std::bad_alloc.
 *
 * @code
 * keel::acl::stream_ref s = keel::acl::adopt_stream(dev, torch_npu_stream);
 * keel::acl::run_on(s, executor, workspace);
 * @endcode
 */
inline stream_ref adopt_stream(device& dev, acl::stream_handle native) {
  return stream_ref::adopt(backend::adopt_stream(dev, native));
}

/**
 * @brief The aclrtStream under a keel stream, to hand to code that calls ACL
 * itself (an aclnn call, another framework). Adopting it back gives a second
 * record: pass the keel handle (or its ref()) instead.
 * @throws keel::error invalid_handle for an empty view.
 */
inline acl::stream_handle native_stream(stream_ref s) {
  return s.checked("keel::acl::native_stream")->native;
}

/** @brief The aclrtEvent under a keel event, as native_stream(). @throws keel::error invalid_handle. */
inline acl::event_handle native_event(event_ref e) {
  return e.checked("keel::acl::native_event")->native;
}

/**
 * @brief A view of an aclrtEvent made elsewhere, as adopt_stream. ACL cannot
 * be asked how an event was created: say event_flags::external for one made
 * with ACL_EVENT_EXTERNAL (keel then records and waits with the external
 * flags), timing for ACL_EVENT_TIME_LINE. Every adoption of one event must
 * say the same flags. @throws keel::error null_parameter, invalid_parameter.
 */
inline event_ref adopt_event(device& dev, acl::event_handle native,
                             keel::event_flags flags = keel::event_flags::default_) {
  return event_ref::adopt(backend::adopt_event(dev, native, flags));
}

static_assert(is_runtime_backend_v<backend>, "keel::acl::backend must model the runtime backend requirement");

}  // namespace keel::acl
