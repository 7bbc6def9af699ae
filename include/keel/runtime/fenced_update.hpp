// SPDX-License-Identifier: Apache-2.0
// Graph-owned updates: basic_fenced_model, a model that owns its update
// fences (an external event and a task group each, registered during
// capture) and applies all of its pending updates per step with one call,
// detecting the lost-signal hazard basic_concurrent_update only documents.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
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
 * registers a fence (an external event the execution waits for and resets)
 * before a task group, and after the group a "passed" signal; per step,
 * stage() queues a replacement for a fence's group and apply() issues every
 * pending update on an update stream and signals every fence, so the next
 * execution runs the new groups.
 *
 * The lost-signal hazard (a second signal of a fence before an execution
 * consumed the first is merged into it, and the next execution then waits
 * forever) is detected, never left to hang:
 * - apply() when the execution that is to consume the previous signal has
 *   not been issued (execute() was not called since) is refused with
 *   invalid_state, and nothing is issued;
 * - apply() after that execution was issued is ordered after it: the update
 *   stream first waits for the execution's "passed" signal (recorded once it
 *   ran the fenced groups), so no stream synchronize is needed between steps
 *   and an update never changes a group an execution is running.
 * An update whose replacement needs more workspace than the group was
 * captured with is refused by stage(), with both sizes in the message.
 *
 * Ownership: owns the model (adopt()), its fences' events and task groups.
 * Thread safety: execute(), stage() and apply() from any thread (one lock
 * keeps the counts). Exceptions: keel::error naming the API and the rule;
 * a refused call changes nothing.
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

  /** @brief A fenced model of @p dev, with no fence and no model yet. */
  explicit basic_fenced_model(device_type& dev) : dev_(&dev) {}
  basic_fenced_model(const basic_fenced_model&) = delete;
  basic_fenced_model& operator=(const basic_fenced_model&) = delete;

  /**
   * @brief In a capture on @p capturing: the fence (wait for its event,
   * reset it), then a task group of what issue(capturing) launches, then the
   * "passed" signal. @p workspace_bytes is the workspace the group's kernels
   * were captured with (replacements may need at most that). Returns the
   * fence's index. @throws keel::error as the stream's calls and the task-group scope.
   */
  template <class F>
  std::size_t fenced_update(basic_stream_ref<B> capturing, std::size_t workspace_bytes, F&& issue) {
    fence f(*dev_, workspace_bytes);
    capturing.wait(f.signal);
    capturing.reset_event(f.signal);
    {
      basic_task_group_scope<B> mark(capturing);
      std::forward<F>(issue)(capturing);
      f.group = mark.end();
    }
    f.passed.record(capturing);
    std::lock_guard<std::mutex> lock(m_);
    fences_.push_back(std::move(f));
    return fences_.size() - 1;
  }

  /** @brief Takes the model the capture made (the one fenced_update() was called in). @throws keel::error invalid_state when it already has one. */
  void adopt(basic_model<B> model) {
    std::lock_guard<std::mutex> lock(m_);
    if (model_)
      throw_error(errc::invalid_state, "keel::fenced_model::adopt", "the fenced model already owns a model");
    model_ = std::move(model);
  }
  /** @brief The model (for introspection and dumps; execute it through execute()). */
  basic_model_ref<B> model() const noexcept { return model_.ref(); }
  /** @brief The number of fences registered. */
  std::size_t fence_count() const {
    std::lock_guard<std::mutex> lock(m_);
    return fences_.size();
  }

  /** @brief Executes the model on @p stream (it waits at each fence for the next apply()). @throws keel::error invalid_state without a model. */
  void execute(basic_stream_ref<B> stream) {
    std::lock_guard<std::mutex> lock(m_);
    if (!model_) throw_error(errc::invalid_state, "keel::fenced_model::execute", "the fenced model has no model (adopt())");
    model_.execute(stream);
    ++executions_;
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
    std::lock_guard<std::mutex> lock(m_);
    if (index >= fences_.size())
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"fence ", index, " does not exist (the model has ", fences_.size(), " fences)"});
    fence& f = fences_[index];
    if (workspace_bytes > f.workspace)
      ::keel::detail::throw_composed(errc::resource_limit, api,
                                     {"the replacement for fence ", index, " needs ", workspace_bytes,
                                      " bytes of workspace and its group was captured with ", f.workspace,
                                      " bytes; capture it with the larger workspace (the model is unchanged)"});
    f.pending = std::move(issue);
  }

  /**
   * @brief Issues every pending update on @p update_stream (each in an
   * update scope of its group) and signals every fence, for the next
   * execution. Ordered after the execution that consumes the previous
   * signals (see the class). Every fence is signalled even when an update
   * is refused (that execution runs the unchanged group); the first refusal
   * is then rethrown. The update stream is checked first: a refusal of it
   * issues nothing, counts no signal and keeps every staged update.
   * @throws keel::error invalid_handle (an empty update stream),
   * capture_violation (it is capturing: the signals would be recorded into
   * that capture, never reach the execution, and the next execution would
   * wait forever), invalid_state (the previous signals' execution was not
   * issued: nothing is issued), update_violation (a refused update).
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
    std::lock_guard<std::mutex> lock(m_);
    if (signals_ > executions_)
      ::keel::detail::throw_composed(
          errc::invalid_state, api,
          {"the fences were signalled for execution ", signals_, ", which has not been issued (", executions_,
           " executions so far): a second signal before an execution consumed the first "
           "would be lost and the next execution would wait forever; call execute() first "
           "(nothing was issued)"});
    std::exception_ptr refused;
    for (fence& f : fences_) {
      issue_function pending = std::move(f.pending);
      f.pending = nullptr;
      try {
        if (signals_ > 0) {
          // The previous signal's execution has passed this fence's group.
          update_stream.wait(f.passed);
          update_stream.reset_event(f.passed);
        }
        if (pending) {
          basic_update_scope<B> scope(update_stream, f.group);
          try {
            pending(update_stream);
          } catch (...) {
            scope.cancel();
            throw;
          }
          scope.end();
        }
      } catch (...) {
        if (!refused) refused = std::current_exception();
      }
      f.signal.record(update_stream);  // always: a running execution never deadlocks
    }
    ++signals_;
    if (refused) std::rethrow_exception(refused);
  }

 private:
  struct fence {
    fence(device_type& dev, std::size_t bytes)
        : signal(dev, event_flags::external), passed(dev, event_flags::external), workspace(bytes) {}
    basic_event<B> signal;  // the update stream records it; the execution waits for it and resets it
    basic_event<B> passed;  // the execution records it after the group; the next apply() waits for it
    basic_task_group<B> group;
    std::size_t workspace = 0;
    issue_function pending;
  };
  device_type* dev_;
  mutable std::mutex m_;
  std::vector<fence> fences_;
  basic_model<B> model_;  // after the fences: destroyed first
  std::uint64_t executions_ = 0;
  std::uint64_t signals_ = 0;
};

/**
 * @def KEEL_RUNTIME_FENCED_MODEL_ALIASES
 * @brief Declares `fenced_model` for @p Backend in the enclosing namespace.
 */
#define KEEL_RUNTIME_FENCED_MODEL_ALIASES(Backend) using fenced_model = ::keel::basic_fenced_model<Backend>;

KEEL_END_NAMESPACE  // namespace keel
