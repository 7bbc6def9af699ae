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
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>
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

struct stream_box;

struct model_box {
  model_handle native = nullptr;
  device* dev = nullptr;
  std::size_t groups = 0;
  std::shared_ptr<std::atomic<bool>> alive;
  std::vector<std::shared_ptr<void>> keep;  // what the captured copies use
};

struct group_box {
  task_group_handle native = nullptr;
  std::shared_ptr<std::atomic<bool>> model_alive;
};

struct event_box {
  event_handle native = nullptr;
  device* dev = nullptr;
  keel::event_flags flags = keel::event_flags::default_;
};

struct host_call;

// The host callables of one stream (launch_host over aclrtLaunchCallback):
// the reporting thread subscribed to the stream, and the error state a
// throwing callable leaves until the stream's next synchronize.
struct host_callbacks {
  std::thread reporter;            // loops on aclrtProcessReport until `stop`
  std::uint64_t reporter_id = 0;   // what aclrtSubscribeReport was given
  std::atomic<bool> stop{false};
  std::atomic<bool> subscribed{false};
  std::mutex m;                    // guards the error state below
  bool failed = false;
  std::string failure;
  std::vector<std::unique_ptr<host_call>> captured;  // run on every replay: freed with the stream
};

// One launch_host call: the userData of its aclrtLaunchCallback.
struct host_call {
  host_callbacks* owner = nullptr;
  bool once = true;  // eager: deleted after it ran; captured: owned by the capturing stream
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
  std::mutex m;                              // guards the fields below
  std::vector<std::shared_ptr<void>> keep;   // owners of memory queued work uses, until a synchronize
  keel::capture_mode mode = keel::capture_mode::global;  // of the capture this stream began
  std::shared_ptr<std::atomic<bool>> capture_alive;
  std::size_t capture_groups = 0;
  std::thread::id capture_thread;
  bool group_open = false;
  bool updating = false;
  std::unique_ptr<host_callbacks> callbacks;  // made by the first launch_host
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
  }
  device(const device&) = delete;
  device& operator=(const device&) = delete;

  /** @brief The resolved ACL function table. Throws: nothing. */
  const api& functions() const noexcept { return api_; }
  /** @brief The ACL device id. Throws: nothing. */
  std::int32_t id() const noexcept { return id_; }
  /** @brief The lease on @p lib (empty when it was not found). Throws: nothing. */
  const library_lease& lease(library lib) const noexcept { return leases_[static_cast<int>(lib)]; }

  /** @brief Throws keel::error for a failed status, with ACL's recent message. */
  void check(status code, const char* function) const { keel::acl::check(code, function, api_.aclGetRecentErrMsg); }

 private:
  friend struct backend;
  library_lease leases_[3];
  api api_;
  std::int32_t id_;
  std::atomic<std::uint64_t> next_stream_id_{1};
  std::mutex captures_m_;
  std::vector<detail::stream_box*> captures_;  // streams that began a capture still in progress
};

/**
 * @brief What an ACL "kernel" receives: the stream's native handle and the
 * function table. On ACL a launch body runs on the host when it is issued and
 * enqueues ACL work (an aclnnXxx phase two) on `stream()`; that work is what
 * capture records and what an update replaces.
 */
class launch_context {
 public:
  launch_context(device& dev, stream_handle stream) noexcept : dev_(&dev), stream_(stream) {}
  device& get_device() const noexcept { return *dev_; }
  const api& functions() const noexcept { return dev_->functions(); }
  stream_handle stream() const noexcept { return stream_; }
  void check(status code, const char* function) const { dev_->check(code, function); }

 private:
  device* dev_;
  stream_handle stream_;
};

/**
 * @brief The ACL backend of the runtime templates: every call is a static
 * member that goes through the device's function table; native handles are
 * pointers to small records keel keeps beside ACL's handle (the device, the
 * flags and capture books ACL cannot be asked for).
 *
 * Ownership: as the runtime requirement says. Thread safety: every call is as
 * thread-safe as ACL's. Exceptions: keel::error with acl_category() codes
 * (equivalent to keel's conditions, see keel::acl::condition) and ACL's own
 * message; not_supported for a function the loaded CANN lacks.
 *
 * Differences from the host backend, because the ACL subset offers no way:
 * - launch_kernel runs the body when issued (it enqueues ACL work).
 * - launch_host is aclrtLaunchCallback (ACL_CALLBACK_BLOCK): the first one on
 *   a stream starts a reporting thread for it (aclrtSubscribeReport, then
 *   aclrtProcessReport in a loop), which runs the stream's callables in order;
 *   the stream's destruction unsubscribes and joins it. A callable that throws
 *   puts the stream in an error state, as on the host backend: later host
 *   callables of the stream are skipped, query() and synchronize() throw
 *   task_failed with the exception's text, and synchronize() clears it. ACL
 *   work (kernels, copies, events) issued after the failure still runs: ACL
 *   cannot skip it. A callable captured into a model runs, on every replay, on
 *   the reporting thread of the stream that captured it, reports its
 *   failure to that stream, and is freed with that stream, which must
 *   outlive the model's executions.
 * - task_count and task_group::size are not supported; group_count counts the
 *   groups marked on the capturing stream.
 * - group_abort and update_abort end the group / update (ACL cannot cancel);
 *   an aborted update that matched the group is therefore applied.
 * - a buffer's release waits for its stream (aclrtSynchronizeStream) unless the
 *   stream captures or cannot synchronize now; then the memory lives until the
 *   stream next synchronizes (or, captured, as long as the model).
 */
struct backend {
  using device_type = device;
  using stream_handle = detail::stream_box*;
  using event_handle = detail::event_box*;
  using model_handle = detail::model_box*;
  using group_handle = detail::group_box*;
  using buffer_handle = detail::block*;
  using launch_context = keel::acl::launch_context;

  static constexpr const char* name = "acl";

  // ---- streams -------------------------------------------------------------

  static stream_handle create_stream(device_type& dev) {
    auto box = std::make_unique<detail::stream_box>();
    dev.check(dev.api_.aclrtCreateStream(&box->native), "aclrtCreateStream");
    box->dev = &dev;
    box->id = dev.next_stream_id_.fetch_add(1, std::memory_order_relaxed);
    return box.release();
  }

  static void destroy_stream(stream_handle s) noexcept {
    const api& a = s->dev->api_;
    capture_discard(s);
    if (a.aclrtSynchronizeStream.get() != nullptr) a.aclrtSynchronizeStream.get()(s->native);
    stop_host_callbacks(s);
    const status st = a.aclrtDestroyStream.get() != nullptr ? a.aclrtDestroyStream.get()(s->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclrtDestroyStream", "the stream could not be destroyed");
    delete s;
  }

  static device_type& device_of(stream_handle s) noexcept { return *s->dev; }
  static std::uint64_t id_of(stream_handle s) noexcept { return s->id; }

  static void synchronize(stream_handle s) {
    s->dev->check(s->dev->api_.aclrtSynchronizeStream(s->native), "aclrtSynchronizeStream");
    release_keeps(s);
    check_host_calls(s, true);
  }

  static bool query(stream_handle s) {
    stream_status st = stream_status::not_ready;
    s->dev->check(s->dev->api_.aclrtStreamQuery(s->native, &st), "aclrtStreamQuery");
    check_host_calls(s, false);
    return st == stream_status::complete;
  }

  static void synchronize_device(device_type& dev) { dev.check(dev.api_.aclrtSynchronizeDevice(), "aclrtSynchronizeDevice"); }

  /**
   * f() runs on the stream's reporting thread when the stream reaches it, and
   * the stream's later work waits for it: aclrtLaunchCallback with
   * ACL_CALLBACK_BLOCK (CANN runtime API reference, aclrtLaunchCallback:
   * https://www.hiascend.com/document/detail/zh/canncommercial/latest/API/runtimeapi/aclcppdevg_03_0126.html;
   * aclrtSubscribeReport 03_0125, aclrtProcessReport, aclrtUnSubscribeReport).
   */
  template <class F>
  static void launch_host(stream_handle s, F&& f) {
    detail::host_callbacks& callbacks = host_callbacks_of(s);
    // A captured callable runs on every replay, on this stream's reporting
    // thread: the stream owns it until its destruction (nothing tells keel
    // when the last model that holds it is gone), instead of the callable
    // deleting itself.
    const bool captured = capture_status(s).state != capture_state::none;
    auto call = std::make_unique<detail::host_call_of<std::decay_t<F>>>(std::forward<F>(f));
    call->owner = &callbacks;
    call->once = !captured;
    if (captured) {
      std::lock_guard<std::mutex> lock(callbacks.m);
      callbacks.captured.reserve(callbacks.captured.size() + 1);
    }
    s->dev->check(s->dev->api_.aclrtLaunchCallback(&run_host_call, call.get(), callback_block::block, s->native),
                  "aclrtLaunchCallback");
    if (captured) {
      std::lock_guard<std::mutex> lock(callbacks.m);
      callbacks.captured.push_back(std::move(call));
    } else {
      (void)call.release();  // enqueued: run_host_call deletes it (it may have already)
    }
  }

  /** Runs f(ctx) now: the body enqueues ACL work on ctx.stream(). */
  template <class F>
  static void launch_kernel(stream_handle s, kernel_kind, F&& f) {
    launch_context ctx(*s->dev, s->native);
    std::forward<F>(f)(ctx);
  }

  static void copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind,
                         std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src) {
    {
      std::lock_guard<std::mutex> lock(s->m);
      s->keep.reserve(s->keep.size() + 2);
    }
    if (bytes != 0)
      s->dev->check(s->dev->api_.aclrtMemcpyAsync(dst, bytes, src, bytes, memcpy_kind_of(kind), s->native),
                    "aclrtMemcpyAsync");
    std::lock_guard<std::mutex> lock(s->m);
    if (keep_dst) s->keep.push_back(std::move(keep_dst));
    if (keep_src) s->keep.push_back(std::move(keep_src));
  }

  /** A blocking copy after the stream's earlier work (aclrtMemcpy alone is not ordered with streams). */
  static void copy(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
    synchronize(s);
    if (bytes != 0) s->dev->check(s->dev->api_.aclrtMemcpy(dst, bytes, src, bytes, memcpy_kind_of(kind)), "aclrtMemcpy");
  }

  static capture_info capture_status(stream_handle s) {
    acl::capture_status st = acl::capture_status::none;
    model_handle_native model = nullptr;
    s->dev->check(s->dev->api_.aclmdlRICaptureGetInfo(s->native, &st, &model), "aclmdlRICaptureGetInfo");
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
    dev.check(dev.api_.aclrtCreateEventWithFlag(&box->native, flag), "aclrtCreateEventWithFlag");
    box->dev = &dev;
    box->flags = flags;
    return box.release();
  }
  static void destroy_event(event_handle e) noexcept {
    const auto destroy = e->dev->api_.aclrtDestroyEvent.get();
    const status st = destroy != nullptr ? destroy(e->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclrtDestroyEvent", "the event could not be destroyed");
    delete e;
  }
  static keel::event_flags flags_of(event_handle e) noexcept { return e->flags; }

  static void record(event_handle e, stream_handle s) {
    const api& a = s->dev->api_;
    if (e->flags == keel::event_flags::external)
      s->dev->check(a.aclrtRecordEventWithFlag(e->native, s->native, record_flags::external), "aclrtRecordEventWithFlag");
    else
      s->dev->check(a.aclrtRecordEvent(e->native, s->native), "aclrtRecordEvent");
  }
  static void wait(stream_handle s, event_handle e) {
    const api& a = s->dev->api_;
    if (e->flags == keel::event_flags::external)  // timeout must be 0 with the external flag
      s->dev->check(a.aclrtStreamWaitEventWithFlag(s->native, e->native, 0, wait_flags::external),
                    "aclrtStreamWaitEventWithFlag");
    else
      s->dev->check(a.aclrtStreamWaitEvent(s->native, e->native), "aclrtStreamWaitEvent");
  }
  static void reset(stream_handle s, event_handle e) {
    s->dev->check(s->dev->api_.aclrtResetEvent(e->native, s->native), "aclrtResetEvent");
  }
  static bool query(event_handle e) {
    event_recorded_status st = event_recorded_status::not_ready;
    e->dev->check(e->dev->api_.aclrtQueryEventStatus(e->native, &st), "aclrtQueryEventStatus");
    return st == event_recorded_status::complete;
  }
  static void synchronize(event_handle e) {
    e->dev->check(e->dev->api_.aclrtSynchronizeEvent(e->native), "aclrtSynchronizeEvent");
  }
  static float elapsed_ms(event_handle start, event_handle end) {
    float ms = 0;
    start->dev->check(start->dev->api_.aclrtEventElapsedTime(&ms, start->native, end->native), "aclrtEventElapsedTime");
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
    const acl::capture_mode native = mode == keel::capture_mode::global          ? acl::capture_mode::global
                                     : mode == keel::capture_mode::thread_local_ ? acl::capture_mode::per_thread
                                                                                 : acl::capture_mode::relaxed;
    dev.check(dev.api_.aclmdlRICaptureBegin(s->native, native), "aclmdlRICaptureBegin");
    {
      std::lock_guard<std::mutex> lock(s->m);
      s->mode = mode;
      s->capture_alive = std::move(alive);
      s->capture_groups = 0;
      s->capture_thread = std::this_thread::get_id();
    }
    std::lock_guard<std::mutex> lock(dev.captures_m_);
    dev.captures_.push_back(s);
  }

  static model_handle capture_end(stream_handle s) {
    device& dev = *s->dev;
    auto box = std::make_unique<detail::model_box>();
    model_handle_native native = nullptr;
    const status st = dev.api_.aclmdlRICaptureEnd(s->native, &native);
    if (st != 0) {
      const std::string recent = detail::recent_message(dev.api_.aclGetRecentErrMsg);
      if (!still_capturing(s)) forget_capture(s, nullptr);  // ACL ended (discarded) the capture
      detail::throw_status(st, "aclmdlRICaptureEnd", recent);
    }
    box->native = native;
    box->dev = &dev;
    forget_capture(s, box.get());
    return box.release();
  }

  static void capture_discard(stream_handle s) noexcept {
    if (!still_capturing(s)) return forget_capture(s, nullptr);
    const api& a = s->dev->api_;
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
    const auto destroy = m->dev->api_.aclmdlRIDestroy.get();
    const status st = destroy != nullptr ? destroy(m->native) : 0;
    if (st != 0) report_error(make_status_code(st), "aclmdlRIDestroy", "the model could not be destroyed");
    if (m->alive) m->alive->store(false, std::memory_order_release);
    delete m;
  }

  static void execute(model_handle m, stream_handle s) {
    s->dev->check(s->dev->api_.aclmdlRIExecuteAsync(m->native, s->native), "aclmdlRIExecuteAsync");
    std::lock_guard<std::mutex> lock(s->m);  // the replay uses the model's memory until the stream passes it
    s->keep.insert(s->keep.end(), m->keep.begin(), m->keep.end());
  }

  static std::size_t task_count(model_handle) {
    throw_error(keel::errc::not_supported, "keel::acl::backend::task_count", "the ACL subset cannot count a model's tasks");
  }
  static std::size_t group_count(model_handle m) noexcept { return m->groups; }

  // ---- task groups and updates -----------------------------------------------

  static void group_begin(stream_handle s) {
    s->dev->check(s->dev->api_.aclmdlRICaptureTaskGrpBegin(s->native), "aclmdlRICaptureTaskGrpBegin");
    std::lock_guard<std::mutex> lock(s->m);
    s->group_open = true;
  }

  static group_handle group_end(stream_handle s) {
    auto box = std::make_unique<detail::group_box>();
    s->dev->check(s->dev->api_.aclmdlRICaptureTaskGrpEnd(s->native, &box->native), "aclmdlRICaptureTaskGrpEnd");
    std::lock_guard<std::mutex> lock(s->m);
    s->group_open = false;
    ++s->capture_groups;
    box->model_alive = s->capture_alive;
    return box.release();
  }

  static void group_abort(stream_handle s) noexcept {
    task_group_handle g = nullptr;
    const auto end = s->dev->api_.aclmdlRICaptureTaskGrpEnd.get();
    if (end != nullptr) end(s->native, &g);  // ACL cannot cancel a group: end it and drop the handle
    std::lock_guard<std::mutex> lock(s->m);
    s->group_open = false;
  }

  static void destroy_group(group_handle g) noexcept { delete g; }  // ACL's group belongs to its model

  static std::size_t group_size(group_handle) {
    throw_error(keel::errc::not_supported, "keel::acl::backend::group_size", "the ACL subset cannot count a task group's tasks");
  }
  static bool group_model_alive(group_handle g) noexcept {
    return g->model_alive && g->model_alive->load(std::memory_order_acquire);
  }

  static void update_begin(stream_handle s, group_handle g) {
    s->dev->check(s->dev->api_.aclmdlRICaptureTaskUpdateBegin(s->native, g->native), "aclmdlRICaptureTaskUpdateBegin");
    std::lock_guard<std::mutex> lock(s->m);
    s->updating = true;
  }
  static void update_end(stream_handle s) {
    const status st = s->dev->api_.aclmdlRICaptureTaskUpdateEnd(s->native);
    {
      std::lock_guard<std::mutex> lock(s->m);
      s->updating = false;
    }
    s->dev->check(st, "aclmdlRICaptureTaskUpdateEnd");
  }
  static void update_abort(stream_handle s) noexcept {
    const auto end = s->dev->api_.aclmdlRICaptureTaskUpdateEnd.get();
    if (end != nullptr) end(s->native);
    std::lock_guard<std::mutex> lock(s->m);
    s->updating = false;
  }

  // ---- memory ----------------------------------------------------------------

  static buffer_handle allocate(stream_handle s, std::size_t bytes, memory_kind kind) {
    auto b = std::make_unique<detail::block>();
    device* dev = s->dev;
    void* p = nullptr;
    if (bytes != 0) {
      switch (kind) {
        case memory_kind::device:
          dev->check(dev->api_.aclrtMalloc(&p, bytes, malloc_policy::huge_first), "aclrtMalloc");
          b->alloc = std::shared_ptr<void>(p, [dev](void* q) { report(dev->api_.aclrtFree.get()(q), "aclrtFree"); });
          break;
        case memory_kind::pinned_host:
          dev->check(dev->api_.aclrtMallocHost(&p, bytes), "aclrtMallocHost");
          b->alloc = std::shared_ptr<void>(p, [dev](void* q) { report(dev->api_.aclrtFreeHost.get()(q), "aclrtFreeHost"); });
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

  static void free_async(buffer_handle b) noexcept {
    stream_handle s = b->stream;
    try {
      if (b->alloc && (capture_status(s).state != capture_state::none ||
                       s->dev->api_.aclrtSynchronizeStream(s->native) != 0)) {
        std::lock_guard<std::mutex> lock(s->m);
        s->keep.push_back(std::move(b->alloc));
      }
    } catch (...) {
      report_current_exception("keel::acl::backend::free_async");
    }
    delete b;  // drops the last owner unless deferred or kept by queued work
  }
  static void* data(buffer_handle b) noexcept { return b->data; }
  static std::size_t size(buffer_handle b) noexcept { return b->bytes; }
  static std::shared_ptr<void> keep_alive(buffer_handle b) { return b->alloc; }

 private:
  using model_handle_native = acl::model_handle;

  // ---- host callables (launch_host) -------------------------------------------

  // How long one aclrtProcessReport waits: also how long a stream's
  // destruction may wait for its reporting thread to notice.
  static constexpr std::int32_t report_timeout_ms = 100;

  // The aclrtCallback of every launch_host: runs the callable unless the
  // stream is in its error state, and records what it throws.
  static void run_host_call(void* user) noexcept {
    auto* call = static_cast<detail::host_call*>(user);
    detail::host_callbacks& callbacks = *call->owner;
    bool skip = false;
    {
      std::lock_guard<std::mutex> lock(callbacks.m);
      skip = callbacks.failed;
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
        std::lock_guard<std::mutex> lock(callbacks.m);
        if (!callbacks.failed) callbacks.failure = std::move(failure);
        callbacks.failed = true;
      }
    }
    if (call->once) delete call;
  }

  // The stream's callbacks, starting its reporting thread on first use.
  static detail::host_callbacks& host_callbacks_of(stream_handle s) {
    std::lock_guard<std::mutex> lock(s->m);
    if (s->callbacks) return *s->callbacks;
    auto callbacks = std::make_unique<detail::host_callbacks>();
    detail::host_callbacks* cb = callbacks.get();
    device* dev = s->dev;
    cb->reporter = std::thread([cb, dev] {
      (void)dev->api_.aclrtSetDevice(dev->id());  // a runtime thread of keel's own
      while (!cb->subscribed.load(std::memory_order_acquire)) {
        if (cb->stop.load(std::memory_order_acquire)) return;
        std::this_thread::yield();
      }
      while (!cb->stop.load(std::memory_order_acquire)) (void)dev->api_.aclrtProcessReport(report_timeout_ms);
    });
    cb->reporter_id = static_cast<std::uint64_t>(cb->reporter.native_handle());
    try {  // not_supported when the runtime lacks it
      dev->check(dev->api_.aclrtSubscribeReport(cb->reporter_id, s->native), "aclrtSubscribeReport");
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
    const auto unsubscribe = s->dev->api_.aclrtUnSubscribeReport.get();
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

  static bool still_capturing(stream_handle s) noexcept {
    const auto info = s->dev->api_.aclmdlRICaptureGetInfo.get();
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
      dev.captures_.erase(std::remove(dev.captures_.begin(), dev.captures_.end(), s), dev.captures_.end());
    }
    std::lock_guard<std::mutex> lock(s->m);
    if (m != nullptr) {
      m->groups = s->capture_groups;
      m->alive = std::move(s->capture_alive);
      m->keep.swap(s->keep);  // the captured copies' owners live as long as the model
    } else if (s->capture_alive) {
      s->capture_alive->store(false, std::memory_order_release);
    }
    s->capture_alive.reset();
    s->capture_groups = 0;
    s->group_open = false;
    s->capture_thread = std::thread::id();
  }
};

// The runtime handles on ACL, named like keel::host's.
KEEL_RUNTIME_HANDLE_ALIASES(backend)

static_assert(is_runtime_backend_v<backend>, "keel::acl::backend must model the runtime backend requirement");

}  // namespace keel::acl
