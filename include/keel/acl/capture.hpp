// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native capture calls: aclmdlRICaptureBegin / End over a
// stream, the model it yields and its executions (aclmdlRIExecuteAsync), and
// the calling thread's capture mode (aclmdlRICaptureThreadExchangeMode). The
// checked layer keeps the capture books and checks the rules before ACL is
// asked (CANN would end a capture it refuses, and destroy its model).
#pragma once

#include <algorithm>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "keel/acl/detail/handles.hpp"
#include "keel/acl/event.hpp"
#include "keel/acl/stream.hpp"
#include "keel/runtime/model_tasks.hpp"
#include "keel/runtime/stream.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {
namespace detail {

/// @cond

// keel's capture modes as ACL's aclmdlRICaptureMode.
constexpr acl::capture_mode native_mode(keel::capture_mode mode) noexcept {
  return mode == keel::capture_mode::global          ? acl::capture_mode::global
         : mode == keel::capture_mode::thread_local_ ? acl::capture_mode::per_thread
                                                     : acl::capture_mode::relaxed;
}

struct capture_calls : stream_calls {
  // A launch body runs when issued: it enqueues ACL work, which ACL captures.
  static constexpr bool kernel_body_runs_at_issue = true;

  // The calling thread's capture mode as thread_capture_mode_scope set it
  // (what the checked layer's unsafe-call rule reads); every thread starts global.
  KEEL_DECL static keel::capture_mode& thread_mode() noexcept;
  static keel::capture_mode thread_capture_mode(device_type&) noexcept { return thread_mode(); }

  // A capture into a conditional body (s->capture_into, keel/acl/conditional.hpp)
  // is aclmdlRICaptureToModelRIBegin, and its end yields that body.
  KEEL_DECL static void capture_begin(stream_handle s, keel::capture_mode mode);

  // s forks into origin's capture by waiting on e (ACL joins it to the capture).
  KEEL_DECL static void capture_join(stream_handle s, stream_handle origin, event_handle e);
  KEEL_DECL static void capture_leave(stream_handle s) noexcept;
  static bool capture_active(stream_handle s) noexcept { return native_capturing(s); }

  KEEL_DECL static model_handle capture_end(stream_handle s);

  KEEL_DECL static void capture_discard(stream_handle s) noexcept;

  KEEL_DECL static void destroy_model(model_handle m) noexcept;

  /** The aclmdlRI under keel's record. */
  static acl::model_handle to_native(model_handle m) noexcept { return m->native; }
  /**
   * keel's record of @p native: only a model keel captured has one (keel
   * keeps the books of a model as it captures it); any other is refused.
   */
  KEEL_DECL static model_handle from_native(device_type& dev, acl::model_handle native, adoption how, handle_tag<model_handle>,
                                  const char* api);
  /** The owner gives the ACL model up: the record goes to the device, until forget_model. */
  KEEL_DECL static acl::model_handle release_native(model_handle m) noexcept;

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
  KEEL_DECL static void execute(model_handle m, stream_handle s);

  // ---- what a capturing stream issues: ACL captures it as issued ------------

  template <class F>
  static void captured_launch_host(stream_handle s, F&& f) {
    launch_host_call(s, std::forward<F>(f), true, keeper_of(s));
    count_untyped(s);
  }
  // A kernel that stream::launch issued with copyable arguments is recorded
  // for the model (typed_launch) before its body issues its ACL work: the
  // record and its arguments' descriptions are written in place in the
  // capture's lists under their lock (launch_records), taken once; the lists grow amortised,
  // and a callable held in place allocates nothing. A body that throws
  // leaves its record pairing with no task (as if never recorded).
  template <class F>
  static void captured_launch_kernel(stream_handle s, kernel_kind kind, F&& f) {
    using typing = launch_typing<std::decay_t<F>>;
    stream_handle keeper = nullptr;
    if constexpr (typing::typed) keeper = s->keeper.load(std::memory_order_acquire);  // null: a capture keel did not begin keeps no books
    if (keeper == nullptr) return launch_kernel(s, kind, std::forward<F>(f));
    launch_records& records = keeper->capture_records;
    const std::pair<std::size_t, std::uint64_t> at = typing::record(records, f, s->native);  // may throw: nothing recorded
    try {
      launch_kernel(s, kind, std::forward<F>(f));
    } catch (...) {
      keel::detail::inlined_unique_lock<launch_records::lock_type> lock(records.m);
      if (records.epoch == at.second) records.launches[at.first].stream = nullptr;
      throw;
    }
  }
  template <class F>
  struct launch_typing {
    static constexpr bool typed = false;
    static std::pair<std::size_t, std::uint64_t> record(launch_records&, const F&, acl::stream_handle) noexcept {
      return {};
    }
  };
  template <class Fn, class... Args>
  struct launch_typing<keel::detail::bound_kernel<Fn, Args...>> {
    using args_type = std::tuple<Args...>;
    static constexpr bool typed = std::is_copy_constructible_v<Fn> && std::is_copy_constructible_v<args_type>;
    // Appends the launch's record and its arguments' descriptions to the
    // capture's lists, written in place under the lists' lock (room made
    // first, so the appends cannot throw); returns the record's index and
    // the lists' epoch. Strong guarantee: nothing is recorded when it throws.
    static std::pair<std::size_t, std::uint64_t> record(launch_records& records,
                                                        const keel::detail::bound_kernel<Fn, Args...>& k,
                                                        acl::stream_handle native) {
      if constexpr (typed) {
        launch_callable shared;  // a callable not held in place is shared: allocated before the lock
        if constexpr (!launch_callable::held_in_place<Fn>) shared.hold(k.fn);  // may throw: nothing recorded
        keel::detail::inlined_unique_lock<launch_records::lock_type> lock(records.m);
        records.make_room(sizeof...(Args));  // may throw: nothing recorded
        const std::size_t index = records.launches.size();
        typed_launch& r = records.launches.emplace_back();  // room made: cannot throw
        r.stream = native;
        r.signature = keel::detail::signature_of<args_type>();
        if constexpr (launch_callable::held_in_place<Fn>) {
          r.kernel.hold(k.fn);  // in place: cannot throw
        } else {
          r.kernel = std::move(shared);
        }
        r.reissue = &reissue;
        std::vector<kernel_argument>& arguments = records.arguments;
        r.first_argument = arguments.size();
        r.argument_count = sizeof...(Args);
        std::apply(
            [&arguments](const auto&... a) {  // room made: cannot throw
              (keel::detail::argument_describer<std::decay_t<decltype(a)>>::describe_into(arguments.emplace_back(), a),
               ...);
            },
            k.args);
        return {index, records.epoch};
      } else {
        (void)records;
        (void)k;
        (void)native;
        return {};
      }
    }
    static void reissue(const void* kernel, device& dev, acl::stream_handle stream, const void* args) {
      const Fn& fn = *static_cast<const Fn*>(kernel);
      launch_context ctx(dev, stream);
      std::apply([&](const auto&... a) { fn(ctx, a...); }, *static_cast<const args_type*>(args));
    }
  };
  KEEL_DECL static void captured_copy_async(stream_handle s, void* dst, const void* src, std::size_t bytes, copy_kind kind,
                                  std::shared_ptr<void> keep_dst, std::shared_ptr<void> keep_src);
  static void captured_memset_async(stream_handle s, void* dst, int value, std::size_t bytes,
                                    std::shared_ptr<void> keep_dst) {
    memset_async(s, dst, value, bytes, std::move(keep_dst));
    if (bytes != 0) count_untyped(s);  // an empty memset issues no task
  }
  static void captured_record(event_handle e, stream_handle s) { event_calls::record(e, s); }
  static void captured_wait(stream_handle s, event_handle e) { event_calls::wait(s, e); }
  static void captured_reset(stream_handle s, event_handle e) { event_calls::reset(s, e); }
  // event_operation::external on a default event (one aclrtCreateEventExWithFlag made).
  KEEL_DECL static void captured_record_external(event_handle e, stream_handle s);
  KEEL_DECL static void captured_wait_external(stream_handle s, event_handle e);
  KEEL_DECL static void captured_execute(model_handle m, stream_handle s);
};
/// @endcond

}  // namespace detail

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
    previous_keel_ = std::exchange(detail::capture_calls::thread_mode(), mode);
  }
  thread_capture_mode_scope(const thread_capture_mode_scope&) = delete;
  thread_capture_mode_scope& operator=(const thread_capture_mode_scope&) = delete;
  ~thread_capture_mode_scope() {
    detail::capture_calls::thread_mode() = previous_keel_;
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
  keel::capture_mode previous_keel_ = keel::capture_mode::global;  // what the checked layer's unsafe-call rule reads
};

} KEEL_END_NAMESPACE  // namespace keel::acl

#if !defined(KEEL_SEPARATE_COMPILATION)
#include "keel/acl/impl/capture.ipp"
#endif
