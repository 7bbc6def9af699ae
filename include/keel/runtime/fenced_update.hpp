// SPDX-License-Identifier: Apache-2.0
// Graph-owned updates: basic_fenced_model, a model that owns its update
// fences (one external event and a task group each, registered during
// capture) and applies all of its pending updates per step with one call,
// detecting the lost-signal hazard basic_concurrent_update can only see in part.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/scope_guard.hpp"
#include "keel/runtime/backend/queries.hpp"
#include "keel/runtime/event.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/task_group.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief A model with its update fences: during capture, fenced_update()
 * registers a fence (the execution waits for the fence's external event and
 * resets it) before a task group; per step, stage() queues a replacement for
 * a fence's group and apply() issues every pending update on an update
 * stream and records every fence's event, so the execution waiting at the
 * fences runs the new groups (the vendor's concurrent-update protocol).
 *
 * Cost and limit: one external event and one task group per fence, nothing
 * else scarce; per execution one default event, recorded after it and reused.
 * A device has few external events (64 on the host backend's default device
 * and on the ACL emulation's), so a fenced model holds at most that many
 * fences, less the device's other external events; with an
 * external_event_pool its fences take loans and give them back when the
 * fenced model goes, so fenced models made one after another share them.
 *
 * The lost-signal hazard (a second signal of a fence before an execution
 * consumed the first is merged into it, and the next execution then waits
 * forever) is detected, never left to hang:
 * - apply() signals the earliest issued execution that has no signal yet;
 *   apply() when every issued execution has its signal (a second apply()
 *   without an execute(), or one before the first execute()) is refused
 *   with invalid_state and issues nothing: the signal would run ahead, every
 *   later update would land one execution late, and a second one would be lost;
 * - apply() is ordered after the execution before the one it signals: the
 *   update stream first waits for that execution's end, so no synchronize is
 *   needed between steps and an update never changes a group an execution
 *   is running; and an execution on another stream than the previous one
 *   first waits for that one's end, so it never takes the earlier one's
 *   signal (executions through one fenced model run one after another);
 * - destroyed (or assigned to) while executions wait at its fences, it
 *   signals them (their groups unchanged) and waits until every execution
 *   issued through it has finished, so no stream is left waiting and no
 *   event or group goes while an execution uses it;
 * - fences registered in a capture that never reached adopt() (it failed or
 *   was discarded) are dropped when fenced_update() is called in another
 *   capture; adopt() refuses a model of another capture than its fences';
 * - a call made from an issue function that apply() is running, on its
 *   thread, is refused with invalid_state (apply() holds the fenced model).
 * An update whose replacement needs more workspace than the group was
 * captured with is refused by stage(), with both sizes in the message.
 *
 * Ownership: owns the model (adopt()), its fences' events (or loans) and
 * task groups; movable (a moved-from fenced model is empty: every call but
 * destruction and assignment throws invalid_handle). Thread safety:
 * execute(), stage(), apply() and the queries from any thread (one lock
 * keeps the counts); moving and destroying it, from one thread while no
 * other uses it. Exceptions: keel::error naming the API and the rule; a
 * refused call changes nothing.
 *
 * @code
 * keel::host::fenced_model fm{dev};
 * { keel::host::capture_scope capture{s};
 *   fm.fenced_update(s, 0, [&](keel::host::stream_ref c) { c.launch(add, k, x, 1.1f); });
 *   fm.adopt(capture.end()); }
 * for (float alpha : alphas) {
 *   fm.execute(s);                                   // waits at the fence for apply()
 *   fm.stage(0, 0, [&](keel::host::stream_ref us) { us.launch(add, k, x, alpha); });
 *   fm.apply(u);
 * }
 * @endcode
 */
template <KEEL_TASK_GROUP_BACKEND B>
class basic_fenced_model {
  static_assert(detail::task_group_layer::check<B>::value && detail::event_layer::check<B>::value);

 public:
  /// The backend's device type.
  using device_type = typename B::device_type;
  /// What stage() runs on the update stream: it issues the group's replacement launches.
  using issue_function = std::function<void(basic_stream_ref<B>)>;

  /** @brief A fenced model of @p dev, with no fence and no model yet; each fence makes its own external event. */
  explicit basic_fenced_model(device_type& dev) : st_(std::make_unique<state>(dev)) {}
  /**
   * @brief A fenced model of @p dev whose fences take their external events
   * from @p pool, a pool of the same device (each fenced_update() acquires
   * one, reset on @p reset_stream, which must not be capturing then, and
   * waits for that reset); the loans go back to the pool when the fenced
   * model goes. The pool and the stream must outlive the calls of
   * fenced_update(); the loans may outlive the pool.
   * @throws keel::error invalid_handle (an empty stream).
   */
  basic_fenced_model(device_type& dev, basic_external_event_pool<B>& pool, basic_stream_ref<B> reset_stream)
      : st_(std::make_unique<state>(dev)) {
    detail::checked_handle(reset_stream, "keel::fenced_model");
    st_->pool = &pool;
    st_->reset_stream = reset_stream;
  }
  /// Takes the other fenced model's fences, model and counts; the other is left empty.
  basic_fenced_model(basic_fenced_model&& o) noexcept = default;
  /// Finishes what this holds (as the destructor), then takes the other's; the other is left empty.
  basic_fenced_model& operator=(basic_fenced_model&& o) noexcept {
    if (this != &o) {
      finish();
      st_ = std::move(o.st_);
    }
    return *this;
  }
  basic_fenced_model(const basic_fenced_model&) = delete;
  basic_fenced_model& operator=(const basic_fenced_model&) = delete;
  /// Signals the executions still waiting at its fences and waits for every execution issued through it (see the class).
  ~basic_fenced_model() { finish(); }

  /**
   * @brief In a capture on @p capturing: the fence (wait for its event,
   * reset it), then a task group of what issue(capturing) launches.
   * @p workspace_bytes is the workspace the group's kernels were captured
   * with (replacements may need at most that). Returns the fence's index.
   * Fences left by a capture other than this one (it failed before adopt())
   * are dropped first. @throws keel::error capture_violation (the stream is
   * not capturing: nothing is issued), invalid_state (the fenced model owns
   * a model already), resource_limit (no external event left, on the device
   * or in the pool), and as the stream's calls and the task-group scope.
   */
  template <class F>
  std::size_t fenced_update(basic_stream_ref<B> capturing, std::size_t workspace_bytes, F&& issue) {
    static constexpr const char* api = "keel::fenced_model::fenced_update";
    const auto stream = detail::checked_handle(capturing, api);
    const capture_info status = stream_capture_status<B>(stream);
    if (status.state != capture_state::active)
      ::keel::detail::throw_composed(
          errc::capture_violation, api,
          {"stream #", B::id_of(stream),
           " is not capturing: a fence is part of a capture (its wait would block the stream until the next "
           "apply()); call it between a capture scope's construction and end() (nothing was issued)"});
    {
      auto lock = enter(api);
      refuse_when_adopted(api);
      drop_other_captures(lock, status.capture_id);
    }
    fence f(make_signal(api), workspace_bytes);
    capturing.wait(f.signal);
    capturing.reset_event(f.signal);
    {
      basic_task_group_scope<B> mark(capturing);
      std::forward<F>(issue)(capturing);
      f.group = mark.end();
    }
    auto lock = enter(api);
    refuse_when_adopted(api);
    drop_other_captures(lock, status.capture_id);
    st_->fences.push_back(std::move(f));
    return st_->fences.size() - 1;
  }

  /**
   * @brief Takes the model the capture made (the one fenced_update() was
   * called in). @throws keel::error invalid_handle (an empty model),
   * invalid_state (it already has one), invalid_parameter (the model is not
   * the capture its fences were registered in); nothing changes.
   */
  void adopt(basic_model<B> model) {
    static constexpr const char* api = "keel::fenced_model::adopt";
    detail::checked_handle(model, api);
    auto lock = enter(api);
    refuse_when_adopted(api);
    if (!st_->fences.empty() && model.id() != st_->capture_id)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"the model (#", model.id(), ") is not the capture its ", st_->fences.size(),
                                      " fences were registered in (#", st_->capture_id,
                                      "): adopt the model of the capture fenced_update() was called in"});
    st_->model = std::move(model);
  }
  /** @brief The model (for introspection and dumps; execute it through execute()); empty before adopt() and when moved from. */
  basic_model_ref<B> model() const noexcept { return st_ ? st_->model.ref() : basic_model_ref<B>{}; }
  /** @brief The number of fences registered. @throws keel::error invalid_handle (moved from), invalid_state (see the class). */
  std::size_t fence_count() const {
    auto lock = enter("keel::fenced_model::fence_count");
    return st_->fences.size();
  }

  /**
   * @brief Executes the model on @p stream (it waits at each fence for the
   * next apply()); on another stream than the previous execution's, it
   * first waits for that one's end, so each signal goes to its own
   * execution. @throws keel::error invalid_state without a model, and as
   * the model's execute() (then nothing is counted).
   */
  void execute(basic_stream_ref<B> stream) {
    static constexpr const char* api = "keel::fenced_model::execute";
    auto lock = enter(api);
    state& st = *st_;
    if (!st.model) throw_error(errc::invalid_state, api, "the fenced model has no model (adopt())");
    const std::uint64_t on = B::id_of(detail::checked_handle(stream, api));
    // Executions on two streams would race for a fence's signal (the later
    // one could take the earlier one's, which would then wait forever): each
    // starts after the one before it ended.
    if (!st.executed_on.empty() && st.executed_on.back() != on && st.done.back()) stream.wait(st.done.back());
    basic_event<B> mark;
    if (!st.spare.empty()) {
      mark = std::move(st.spare.back());
      st.spare.pop_back();
    } else {
      mark = basic_event<B>(*st.dev);
    }
    // Reserved before the execution: nothing below may fail once it is issued but the record.
    st.done.emplace_back();
    try {
      st.executed_on.push_back(on);
    } catch (...) {
      st.done.pop_back();
      st.spare.push_back(std::move(mark));
      throw;
    }
    try {
      st.model.execute(stream);
    } catch (...) {
      st.done.pop_back();
      st.executed_on.pop_back();
      st.spare.push_back(std::move(mark));
      throw;
    }
    ++st.executions;
    // Its end orders the next apply(); without it (a failed record) that
    // apply() is ordered by nothing, as a plain concurrent update.
    mark.record(stream);
    st.done.back() = std::move(mark);
  }

  /**
   * @brief Queues a replacement for fence @p index's group, issued by
   * issue(update_stream) at the next apply(); a later stage() of the same
   * fence replaces it. @throws keel::error invalid_parameter (no such
   * fence), resource_limit (@p workspace_bytes exceeds the group's
   * captured workspace; the sizes are in the message).
   */
  void stage(std::size_t index, std::size_t workspace_bytes, issue_function issue) {
    static constexpr const char* api = "keel::fenced_model::stage";
    if (!issue) throw_error(errc::null_parameter, api, "the update's issue function is empty");
    auto lock = enter(api);
    std::vector<fence>& fences = st_->fences;
    if (index >= fences.size())
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"fence ", index, " does not exist (the model has ", fences.size(), " fences)"});
    fence& f = fences[index];
    if (workspace_bytes > f.workspace)
      ::keel::detail::throw_composed(errc::resource_limit, api,
                                     {"the replacement for fence ", index, " needs ", workspace_bytes,
                                      " bytes of workspace and its group was captured with ", f.workspace,
                                      " bytes; capture it with the larger workspace (the model is unchanged)"});
    f.pending = std::move(issue);
  }

  /**
   * @brief Issues every pending update on @p update_stream (each in an
   * update scope of its group) and records every fence's event, for the
   * earliest issued execution without a signal; ordered after the execution
   * before it (see the class). Every fence is signalled even when an update
   * is refused (that execution runs the unchanged group); the first refusal
   * is then rethrown. The update stream and the counts are checked first: a
   * refusal of them issues nothing, counts no signal and keeps every staged
   * update. @throws keel::error invalid_handle (an empty update stream or a
   * moved-from fenced model), capture_violation (it is capturing: the
   * signals would be recorded into that capture, never reach the execution,
   * and the next execution would wait forever), invalid_state (every issued
   * execution has its signal; or called from an issue function of apply()),
   * invalid_parameter (the execution to signal was issued on the update
   * stream: its signal would queue behind it), update_violation (a refused update).
   */
  void apply(basic_stream_ref<B> update_stream) {
    static constexpr const char* api = "keel::fenced_model::apply";
    const auto stream = detail::checked_handle(update_stream, api);
    const capture_info status = stream_capture_status<B>(stream);
    if (status.state != capture_state::none)
      ::keel::detail::throw_composed(
          errc::capture_violation, api,
          {"the update stream #", B::id_of(stream),
           status.state == capture_state::active ? " is capturing" : " has an invalidated capture",
           ": the fences' signals would be recorded into that capture while apply() counts them, and the "
           "next execution would wait forever; apply on a stream that is not capturing (nothing was "
           "issued, the staged updates are kept)"});
    auto lock = enter(api);
    state& st = *st_;
    if (st.signals >= st.executions)
      ::keel::detail::throw_composed(
          errc::invalid_state, api,
          {"every issued execution has its signal (", st.executions, " executions, ", st.signals,
           " signals): apply() signals an execution already issued; a signal ahead of its execution would make "
           "every later update land one execution late, and a second one would be lost (the next execution "
           "would wait forever); call execute() first (nothing was issued, the staged updates are kept)"});
    if (st.executed_on[static_cast<std::size_t>(st.signals + 1 - st.first_done)] == B::id_of(stream))
      ::keel::detail::throw_composed(
          errc::invalid_parameter, api,
          {"the execution this apply() signals waits at its fence on stream #", B::id_of(stream),
           ", the update stream given: the signals would queue behind it and it would wait forever; apply on "
           "another stream (nothing was issued, the staged updates are kept)"});
    // Ordered after the execution before the one this signals: its own
    // signal was consumed by then, so this one is never merged into it.
    order_after_previous(update_stream, st.signals + 1);
    st.applying.store(std::this_thread::get_id(), std::memory_order_relaxed);
    auto done_applying = make_scope_exit([&st]() noexcept { st.applying.store({}, std::memory_order_relaxed); });
    std::exception_ptr refused;
    for (fence& f : st.fences) {
      issue_function pending = std::move(f.pending);
      f.pending = nullptr;
      try {
        if (pending) {
          basic_update_scope<B> scope(update_stream, f.group);
          {
            // The exception tells the caller: abandoning is not a scope left by mistake.
            auto abandon_on_failure = make_scope_fail([&]() noexcept { scope.cancel(); });
            pending(update_stream);
          }
          scope.end();
        }
      } catch (...) {
        if (!refused) refused = std::current_exception();
      }
      try {
        f.signal.record(update_stream);  // always: a waiting execution never deadlocks
      } catch (...) {
        if (!refused) refused = std::current_exception();
      }
    }
    ++st.signals;
    if (refused) std::rethrow_exception(refused);
  }

 private:
  struct fence {
    fence(std::pair<basic_event<B>, basic_pooled_event<B>> made, std::size_t bytes)
        : owned(std::move(made.first)), loan(std::move(made.second)), workspace(bytes) {
      signal = owned ? owned.ref() : loan.ref();
    }
    basic_event<B> owned;        // the fence's external event, when the fenced model made it
    basic_pooled_event<B> loan;  // or its loan from the pool
    basic_event_ref<B> signal;   // the update stream records it; the execution waits for it and resets it
    basic_task_group<B> group;
    std::size_t workspace = 0;
    issue_function pending;
  };
  // Behind a pointer: a move leaves the lock and the books in place.
  struct state {
    explicit state(device_type& d) : dev(&d) {}
    device_type* dev;
    basic_external_event_pool<B>* pool = nullptr;
    basic_stream_ref<B> reset_stream;
    mutable std::mutex m;
    std::atomic<std::thread::id> applying{};  // the thread running apply()'s issue functions
    std::vector<fence> fences;
    std::uint64_t capture_id = 0;  // the capture the fences were registered in
    basic_model<B> model;          // after the fences: destroyed first
    std::uint64_t executions = 0;
    std::uint64_t signals = 0;
    // The end marks of the executions from first_done on (an empty mark: its
    // record failed), and the streams they were issued on.
    std::deque<basic_event<B>> done;
    std::deque<std::uint64_t> executed_on;
    std::uint64_t first_done = 1;
    std::vector<basic_event<B>> spare;  // marks no wait refers to any more
  };

  std::unique_lock<std::mutex> enter(const char* api) const {
    if (!st_)
      throw_error(errc::invalid_handle, api, "the fenced model is empty: it was moved from");
    if (st_->applying.load(std::memory_order_relaxed) == std::this_thread::get_id())
      throw_error(errc::invalid_state, api,
                  "called from an issue function that apply() is running on this thread: apply() holds the fenced "
                  "model until its updates are issued; call it before or after apply()");
    return std::unique_lock<std::mutex>(st_->m);
  }
  void refuse_when_adopted(const char* api) const {
    if (st_->model)
      throw_error(errc::invalid_state, api,
                  "the fenced model owns a model already (adopt()): its fences are that capture's; use another "
                  "fenced model for another capture");
  }
  // Fences of another capture belong to one that failed or was discarded
  // before adopt(): nothing will ever execute them.
  void drop_other_captures(std::unique_lock<std::mutex>& lock, std::uint64_t capture_id) {
    if (st_->capture_id == capture_id) return;
    std::vector<fence> dead;
    dead.swap(st_->fences);
    st_->capture_id = capture_id;
    lock.unlock();
    dead.clear();  // their events and groups go outside the lock
    lock.lock();
  }
  std::pair<basic_event<B>, basic_pooled_event<B>> make_signal(const char* api) {
    if (!st_->pool) return {basic_event<B>(*st_->dev, event_flags::external), basic_pooled_event<B>{}};
    const auto reset = detail::checked_handle(st_->reset_stream, api);
    const capture_info status = stream_capture_status<B>(reset);
    if (status.state != capture_state::none)
      ::keel::detail::throw_composed(errc::capture_violation, api,
                                     {"the pool's reset stream #", B::id_of(reset),
                                      " is capturing: the reset of the fence's event would be captured too; "
                                      "make the fenced model with a stream that is not capturing"});
    basic_pooled_event<B> loan = st_->pool->acquire(st_->reset_stream);
    st_->reset_stream.synchronize();  // reset before any apply() may signal it
    return {basic_event<B>{}, std::move(loan)};
  }
  // Signal n is consumed by execution n: wait for execution n - 1's end.
  void order_after_previous(basic_stream_ref<B> on, std::uint64_t n) {
    state& st = *st_;
    if (n < 2 || n - 1 < st.first_done) return;
    basic_event<B>& mark = st.done[static_cast<std::size_t>(n - 1 - st.first_done)];
    if (mark) on.wait(mark);
    // A wait waits for the record that was last when it was issued: the
    // marks up to n - 1 may be recorded again by later executions.
    while (st.first_done < n) {
      if (st.done.front()) st.spare.push_back(std::move(st.done.front()));
      st.done.pop_front();
      st.executed_on.pop_front();
      ++st.first_done;
    }
  }
  void finish() noexcept {
    if (!st_) return;
    state& st = *st_;
    if (st.signals < st.executions && !st.fences.empty()) {
      try {
        basic_stream<B> signaller(*st.dev);
        for (std::uint64_t n = st.signals + 1; n <= st.executions; ++n) {
          order_after_previous(signaller, n);
          for (fence& f : st.fences) f.signal.record(signaller);
          ++st.signals;
        }
      } catch (...) {  // the stream's destructor waited for what it issued
        report_current_exception("keel::fenced_model::~fenced_model");
      }
    }
    try {
      if (!st.done.empty() && st.done.back()) st.done.back().synchronize();
    } catch (...) {
      report_current_exception("keel::fenced_model::~fenced_model");
    }
    st_.reset();
  }

  std::unique_ptr<state> st_;
};

/**
 * @def KEEL_RUNTIME_FENCED_MODEL_ALIASES
 * @brief Declares `fenced_model` for @p Backend in the enclosing namespace.
 */
#define KEEL_RUNTIME_FENCED_MODEL_ALIASES(Backend) using fenced_model = ::keel::basic_fenced_model<Backend>;

KEEL_END_NAMESPACE  // namespace keel
