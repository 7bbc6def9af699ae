// SPDX-License-Identifier: Apache-2.0
// The ACL backend's stream record: the aclrtStream, the owners of memory its
// queued work uses, and its host callables' reporting thread and error state.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <string_view>
#include <type_traits>
#include <vector>

#include "keel/acl/api.hpp"
#include "keel/acl/types.hpp"
#include "keel/core/biased_lock.hpp"
#include "keel/runtime/checked/books.hpp"
#include "keel/runtime/model_tasks.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

class device;

namespace detail {

/// @cond
struct group_box;
struct model_box;
struct host_call;

struct host_call;

// The host callables run for one stream (launch_host over
// aclrtLaunchCallback, and captured ones its model executions replay): the
// reporting thread subscribed to the stream, and the error state a throwing
// callable leaves until the stream's next synchronize.
struct host_callbacks {
  // With aclrtLaunchHostFunc (`host_func`) there is no reporter: the
  // runtime runs the callables on a thread it keeps for the stream, which a
  // first host function marks as this stream's (`runtime_thread`, under m).
  bool host_func = false;
  bool marked = false;             // the marking host function was issued (under m)
  std::thread::id runtime_thread;  // (under m)
  std::thread reporter;            // loops on aclrtProcessReport until `stop`
  std::uint64_t reporter_id = 0;   // what aclrtSubscribeReport was given
  std::atomic<bool> stop{false};
  std::atomic<bool> subscribed{false};
  std::mutex m;                    // guards the error state below (failed is also read without it)
  std::atomic<bool> failed{false};  // written under m, with failure
  // The stream is being destroyed with aclrtDestroyStreamForce: the callables
  // not yet run are dropped. (A runtime may still deliver them, as the
  // emulation delivers callbacks on a stream in its error state.)
  std::atomic<bool> dropped{false};
  std::string failure;
  // The ACL stream it reports for, and the table to ask it with: a stream in
  // its error state still delivers its callbacks (CANN's default
  // ACL_CONTINUE_ON_FAILURE runs the tasks after a failed one), and keel
  // skips the callable there, as the host backend skips work.
  stream_handle native = nullptr;
  const api* functions = nullptr;
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
  // Whether the runner asks ACL whether the stream failed (aclrtStreamQuery)
  // before it runs the callable: always for a captured one (its model holds
  // ACL work); for an eager one, when work that may fail the ACL stream may
  // precede it (stream_box::acl_work, stream_box::foreign).
  bool ask_runtime = true;
  // Captured: the model it was captured into (a conditional body, or the
  // capture's model), and the table to abort it with. A failure aborts that
  // model's executions in flight (aclmdlRIAbort), so the rest of its work
  // is skipped as on the host backend and a WHILE loop around a body ends
  // instead of running forever with its later callables skipped.
  acl::model_handle model = nullptr;
  const api* functions = nullptr;
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

// The callable of a recorded launch (without its arguments). One that is
// trivially copyable and small (a stateless one, like run_on's) is held in
// place, so recording it allocates nothing; any other is shared.
class launch_callable {
 public:
  template <class Fn>
  static constexpr bool held_in_place =
      std::is_trivially_copyable_v<Fn> && sizeof(Fn) <= 2 * sizeof(void*) && alignof(Fn) <= alignof(void*);

  launch_callable() noexcept = default;
  template <class Fn>
  void hold(const Fn& fn) {
    if constexpr (held_in_place<Fn>) {
      ::new (static_cast<void*>(in_place_)) Fn(fn);
      shared_.reset();
    } else {
      shared_ = std::make_shared<const Fn>(fn);
    }
  }
  // The callable; a copy of this holder holds its own (in place) or shares it.
  const void* get() const noexcept { return shared_ ? shared_.get() : static_cast<const void*>(in_place_); }

 private:
  alignas(void*) unsigned char in_place_[2 * sizeof(void*)] = {};
  std::shared_ptr<const void> shared_;
};

// A kernel that stream::launch issued while capturing, with copyable
// arguments: enough to issue it again with new arguments of the same types
// (a per-task update, keel/acl/model_update.hpp) and to report its
// arguments (keel/acl/introspection.hpp). Its arguments' descriptions lie
// in one list per capture (launch_records::arguments, then
// model_box::launch_arguments), so a record allocates nothing of its own.
struct typed_launch {
  stream_handle stream = nullptr;     // the aclrtStream its body issued to; null: the launch failed
  const void* signature = nullptr;    // keel::detail::signature_of its arguments' std::tuple
  launch_callable kernel;             // the launch's callable (without its arguments)
  // Runs the callable with the arguments behind args (a std::tuple of the
  // recorded types) on stream of dev: it issues the kernel's ACL work there.
  void (*reissue)(const void* kernel, device& dev, stream_handle stream, const void* args) = nullptr;
  std::size_t first_argument = 0;  // its arguments in the capture's (then the model's) list: as captured,
  std::size_t argument_count = 0;  // then as the last update set them
};

// A capture's typed launches and their arguments' descriptions, under a
// lock of their own that a captured launch takes once (a self-biased lock:
// the sections are a few stores, and one thread captures). The lists go to the model at capture end,
// and the next capture reserves what the last one reached, so a recapture
// grows them once. `epoch` counts the hand-overs: a launch that failed
// after another thread ended the capture leaves the next capture's records
// alone.
struct launch_records {
  // The capturing thread appends at every launch: it enters with plain
  // stores once it owns the lock (keel/core/biased_lock.hpp).
  using lock_type = keel::detail::self_biased_mutex;
  lock_type m;  // guards the fields below
  std::vector<typed_launch> launches;
  std::vector<kernel_argument> arguments;
  std::uint64_t epoch = 0;
  std::size_t last_launches = 0, last_arguments = 0;

  // A capture begins (or a model under construction binds the stream): empty lists, room as the last capture's.
  void restart() {
    std::lock_guard<lock_type> lock(m);
    forget_locked();
    launches.reserve(last_launches);
    arguments.reserve(last_arguments);
  }
  // Room for one more launch with @p argument_count arguments, so that
  // appending them cannot throw. Caller holds m. Strong guarantee (only the
  // capacities change).
  void make_room(std::size_t argument_count) {
    if (KEEL_UNLIKELY(launches.size() == launches.capacity()))
      launches.reserve(launches.size() < 8 ? 16 : 2 * launches.size());
    const std::size_t used = arguments.size();
    if (KEEL_UNLIKELY(arguments.capacity() - used < argument_count))
      arguments.reserve(std::max(used + argument_count, 2 * used));
  }
  // The capture ends: the model takes the lists. Throws: nothing.
  void hand_over(std::vector<typed_launch>& to_launches, std::vector<kernel_argument>& to_arguments) noexcept {
    std::lock_guard<lock_type> lock(m);
    last_launches = launches.size();
    last_arguments = arguments.size();
    to_launches.swap(launches);
    to_arguments.swap(arguments);
    forget_locked();
  }
  // Appends the lists to the model's (a model built from several bound
  // streams), each record rebased onto its argument list.
  void append_to(std::vector<typed_launch>& to_launches, std::vector<kernel_argument>& to_arguments) {
    std::lock_guard<lock_type> lock(m);
    const std::size_t base = to_arguments.size();
    to_launches.reserve(to_launches.size() + launches.size());
    to_arguments.insert(to_arguments.end(), arguments.begin(), arguments.end());
    for (typed_launch& r : launches) {
      r.first_argument += base;
      to_launches.push_back(std::move(r));  // reserved: cannot throw
    }
    forget_locked();
  }
  // The capture was discarded. Throws: nothing.
  void discard() noexcept {
    std::lock_guard<lock_type> lock(m);
    forget_locked();
  }

 private:
  void forget_locked() noexcept {
    launches.clear();
    arguments.clear();
    ++epoch;
  }
};

// Per aclrtStream of a capture: how many tasks keel issued there that ACL
// lists with no type of its own (ACL_MODEL_RI_TASK_DEFAULT: copies, memsets,
// host functions, model executions, conditional tasks). CANN documents no
// type for a conditional task and no query for its bodies, so keel finds a
// conditional's task by its rank among these (introspection.hpp).
struct untyped_count {
  stream_handle stream = nullptr;
  std::size_t count = 0;
};
// A conditional task keel issued while capturing: its aclrtStream, its rank
// among that stream's untyped tasks, its kind's name and how many bodies it
// has (the next ones of the model's bodies, in the order they were made).
struct conditional_task {
  stream_handle stream = nullptr;
  std::size_t rank = 0;
  std::string_view kind;
  std::size_t bodies = 0;
};

struct stream_box {
  stream_handle native = nullptr;
  device* dev = nullptr;
  std::uint64_t id = 0;
  bool persistent = false;  // made with ACL_STREAM_PERSISTENT: a model can be built on it (keel/acl/built_model.hpp)
  // Whether the device owns the record (a stream viewed from elsewhere, or
  // one its keel owner released): keel never destroys the ACL stream then.
  // Changed only under the device's stream registry lock (detail/registry.hpp).
  std::atomic<bool> adopted{false};
  bool forced = false;   // destroy_stream discards the work (aclrtDestroyStreamForce) instead of waiting
  // The owner (or the device, for a record it owns) and every scope on the
  // stream hold the record (retain_stream),
  // so a scope's late end after destroy_stream finds it (the checked layer's
  // books say the stream was destroyed) instead of freed memory.
  std::atomic<long> refs{1};
  std::mutex m;                              // guards the fields below
  std::vector<std::shared_ptr<void>> keep;   // owners of memory queued work uses, until a synchronize
  std::unique_ptr<host_callbacks> callbacks;  // made by the first launch_host (or execution of a model with one)
  // The callbacks once launch_host needs nothing more of them (the host-function
  // path, its runtime thread marked): read without m. Cleared with callbacks.
  std::atomic<host_callbacks*> ready_callbacks{nullptr};
  // Whether a capture keel did not begin may hold the stream, so that
  // launch_host must ask ACL (aclmdlRICaptureGetInfo) who owns a callable: set
  // once the aclrtStream left keel (native_handle(), release()) or came from
  // elsewhere (a view, an adoption), or the stream waited on an event whose
  // records may lie in such a capture (event_box::foreign). Never cleared:
  // keel cannot see the other library's capture end.
  std::atomic<bool> foreign{false};
  // Whether work that may fail the ACL stream (a kernel, a copy, an event
  // wait, a model execution) was issued since its last synchronize, which
  // clears ACL's error state: only then (or on a foreign stream) does an eager
  // host callable's runner ask ACL whether the stream failed.
  std::atomic<bool> acl_work{false};
  // While the stream takes part in a capture keel began: the stream that
  // began it, whose keep list (moved into the model at capture end) holds
  // what captured work uses. Set by the native capture calls under m; read
  // without it (a captured launch reads it once per launch).
  std::atomic<stream_box*> keeper{nullptr};
  bool capture_host_calls = false;  // the capture this stream began holds host callables
  // The conditional bodies the capture this stream began made (their host
  // callables are known only when their own captures end): moved into the model.
  std::vector<model_box*> capture_bodies;
  // The capture's typed kernel launches (on the stream that began it, or
  // that a model under construction bound): moved into the model.
  launch_records capture_records;
  // The aclrtStreams in the order they joined the capture: moved into the model.
  std::vector<stream_handle> capture_streams;
  // The capture's untyped tasks per stream and its conditional tasks (under
  // m, on the stream that began it): moved into the model. `untyped_lost`:
  // a count could not be kept (no room), so no conditional is paired.
  std::vector<untyped_count> capture_untyped;
  std::vector<conditional_task> capture_conditionals;
  bool capture_untyped_lost = false;
  bool group_open = false;          // ACL has a task group open on it (capture_discard ends it)
  model_box* capture_into = nullptr;  // the conditional body its next capture fills (keel/acl/conditional.hpp)
  // The checked layer's books (keel/runtime/checked/books.hpp).
  checked::stream_books<stream_box*, group_box*> books;
};

// Counts a task just issued to @p s that ACL lists untyped, in the books of
// the capture keel began that s takes part in (none: nothing counted), and
// returns its rank among s's untyped tasks there. Caller holds the capture
// origin's m (@p keeper, s's keeper).
inline std::size_t count_untyped_locked(stream_box* keeper, stream_handle native) noexcept {
  for (untyped_count& c : keeper->capture_untyped)
    if (c.stream == native) return c.count++;
  try {
    keeper->capture_untyped.push_back(untyped_count{native, 1});
  } catch (...) {
    keeper->capture_untyped_lost = true;
  }
  return 0;
}
inline void count_untyped(stream_box* s) noexcept {
  stream_box* const keeper = s->keeper.load(std::memory_order_acquire);
  if (keeper == nullptr) return;
  std::lock_guard<std::mutex> lock(keeper->m);
  (void)count_untyped_locked(keeper, s->native);
}
/// @endcond

}  // namespace detail
} KEEL_END_NAMESPACE  // namespace keel::acl
