// SPDX-License-Identifier: Apache-2.0
// The ACL device's class: CANN's libraries found and leased, the resolved
// function table, the device made current on every thread that calls keel,
// and what the device keeps for its streams (adopted records, releases in
// stream order, deferred destructions); and the context a kernel body
// receives. The native layers include this; a program includes
// keel/acl/device.hpp, which also defines the members that need the whole
// backend (keel/acl/impl/device.ipp).
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "keel/acl/api.hpp"
#include "keel/acl/detail/block.hpp"
#include "keel/acl/detail/capture_state.hpp"
#include "keel/acl/detail/event_state.hpp"
#include "keel/acl/detail/group_state.hpp"
#include "keel/acl/detail/registry.hpp"
#include "keel/acl/detail/stream_state.hpp"
#include "keel/acl/library.hpp"
#include "keel/acl/status.hpp"
#include "keel/acl/types.hpp"
#include "keel/core/error.hpp"
#include "keel/plugin/library_lease.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

class device;

/** @brief Where and which ACL device to open. A plain value. */
/** @brief Where and which ACL device to open. A plain value. */
struct device_options {
  /// The ACL device id (aclrtSetDevice).
  std::int32_t device_id = 0;
  /// The directory holding libascendcl.so (and libnnopbase.so, libopapi.so);
  /// empty: ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, LD_LIBRARY_PATH, the loader's
  /// own search (library_candidates()).
  std::string library_directory;
  /// Host callables through aclrtLaunchHostFunc (no subscribed thread) when
  /// the runtime has it; false keeps aclrtLaunchCallback with a reporting
  /// thread per stream (CANN forbids mixing the two on one stream: say false
  /// when other code subscribes threads to the streams keel launches on).
  bool host_functions = true;
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


struct stream_calls;
struct event_calls;
struct memory_calls;
struct capture_calls;
struct task_group_calls;
struct built_model_calls;
struct native_types;
struct context_calls;
struct stream_config_calls;

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
    if (!options.host_functions) api_.aclrtLaunchHostFunc = decltype(api_.aclrtLaunchHostFunc)("aclrtLaunchHostFunc");
    const status init = api_.aclInit(nullptr);
    if (init != 100002) check(init, "aclInit");  // ACL_ERROR_REPEAT_INITIALIZE: someone else did
    check(api_.aclrtSetDevice(id_), "aclrtSetDevice");
    current_on_this_thread() = serial_;
    // aclrtSetDevice made the device's default context current: keel views
    // it, never owns it (context::from_native_handle refuses it).
    if (const auto current = api_.aclrtGetCurrentContext.get()) (void)current(&default_context_);
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
  /**
   * @brief The device's default context, the one aclrtSetDevice binds
   * (ACL's: it ends with aclrtResetDevice, never with aclrtDestroyContext),
   * or null when the loaded CANN lacks aclrtGetCurrentContext. Throws: nothing.
   */
  context_handle default_context() const noexcept { return default_context_; }
  /** @brief The lease on @p lib (empty when it was not found). Throws: nothing. */
  const library_lease& lease(library lib) const noexcept { return leases_[static_cast<int>(lib)]; }

  /** @brief Throws keel::error for a failed status, with ACL's recent message. */
  void check(status code, const char* function) const { keel::acl::check(code, function, api_.aclGetRecentErrMsg); }

  /**
   * @brief Forgets keel's record of an aclrtStream the device holds one for
   * without a keel owner (viewed through stream_ref(dev, native), or given
   * up by stream::release()), after its owner destroyed it or before it
   * may: the address can come back for a new stream. No keel handle may
   * still use the record, and the stream must have finished the work keel
   * issued to it (the owners of memory that work used are dropped here); a
   * capture keel began on it is forgotten, not ended. A stream a keel
   * stream owns is left alone. Throws: nothing.
   */
  void forget_stream(acl::stream_handle native) noexcept;
  /**
   * @brief How many released buffers still wait for their stream to pass the
   * release point (after freeing those it has passed). Throws: nothing.
   */
  std::size_t pending_releases() noexcept;

  /** @brief Forgets keel's record of an aclrtEvent without a keel owner, as forget_stream(). Throws: nothing. */
  void forget_event(acl::event_handle native) noexcept { delete events_.take_device_record(native); }
  /**
   * @brief Forgets keel's record of an aclmdlRI a keel model released, as
   * forget_stream(): what its captured work used (memory owners, host
   * callables) goes now, and its task groups see it dead. Throws: nothing.
   */
  void forget_model(acl::model_handle native) noexcept;
  /** @brief Forgets keel's record of an aclrtTaskGrp a keel task group released, as forget_stream(). Throws: nothing. */
  void forget_group(acl::task_group_handle native) noexcept;

 private:
  friend struct detail::stream_calls;
  friend struct detail::event_calls;
  friend struct detail::memory_calls;
  friend struct detail::capture_calls;
  friend struct detail::task_group_calls;
  friend struct detail::built_model_calls;
  friend struct detail::native_types;
  friend struct detail::context_calls;
  friend struct detail::stream_config_calls;

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
  context_handle default_context_ = nullptr;  // aclrtSetDevice's, seen by the constructor
  std::uint64_t serial_ = next_serial();  // names this device in threads' current_on_this_thread()
  std::atomic<std::uint64_t> next_stream_id_{1};
  // keel's records by ACL handle (detail/registry.hpp): every live stream,
  // event, model and task group record of this device, keel-made or viewed
  // from elsewhere, so every view of one handle shares one record.
  detail::record_registry<detail::stream_box> streams_;
  detail::record_registry<detail::event_box> events_;
  detail::record_registry<detail::model_box> models_;
  detail::record_registry<detail::group_box> groups_;
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
  checked::device_books<detail::stream_box*> books_;  // the checked layer's capture books
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
 * capture records and what an update replaces. A body must not begin or end
 * a capture on `stream()` itself: keel learns of a capture it did not begin
 * only on a stream whose handle it gave out (native_handle(), release()) or
 * took in (a view, an adoption).
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

} KEEL_END_NAMESPACE  // namespace keel::acl
