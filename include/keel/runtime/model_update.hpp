// SPDX-License-Identifier: Apache-2.0
// Updating a captured model's tasks after capture: basic_task_update_scope
// changes one task at a time (a kernel's arguments, a copy's addresses and
// size, or disables a task) and commits them together in stream order;
// update_model replaces every task of a model with those of another model
// captured with the same topology (CUDA's cudaGraphExecUpdate, CANN's
// aclmdlRITaskGetParams / aclmdlRITaskSetParams / aclmdlRIUpdate).
#pragma once

#include <cstddef>
#include <atomic>
#include <exception>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/model_tasks.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/// @cond
namespace detail {
template <class B, class = void>
struct has_model_updates : std::false_type {};
template <class B>
struct has_model_updates<B, std::void_t<decltype(B::task_update_abort(std::declval<typename B::model_handle>()))>>
    : std::true_type {};
template <class B>
struct model_update_backend {
  static_assert(has_model_updates<B>::value,
                "keel: this backend has no per-task or whole-model update (its checked layer needs "
                "checked::model_updates: task_update_begin/_set_kernel/_set_copy/_disable/_end/_abort, update_model)");
  using type = B;
};
// Whether an argument given as @p A is passed as the type @p T a
// kernel_task names: the same type, or a pointer to the same type with
// more qualifiers (float* for const float*), or nullptr for a pointer;
// no arithmetic conversion.
template <class A, class T>
constexpr bool passes_as() noexcept {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<D, T>) {
    return true;
  } else if constexpr (std::is_pointer_v<T> && std::is_null_pointer_v<D>) {
    return true;
  } else if constexpr (std::is_pointer_v<T> && std::is_pointer_v<D>) {
    return std::is_same_v<std::remove_cv_t<std::remove_pointer_t<D>>, std::remove_cv_t<std::remove_pointer_t<T>>> &&
           std::is_convertible_v<D, T>;
  } else {
    return false;
  }
}
template <class Given, class Named>
struct all_pass_as;
template <class... A, class... T>
struct all_pass_as<std::tuple<A...>, std::tuple<T...>> {
  static constexpr bool check() noexcept {
    if constexpr (sizeof...(A) == sizeof...(T)) {
      return (passes_as<A, T>() && ...);
    } else {
      return false;
    }
  }
  static constexpr bool value = check();
};

// A handle that names a model it does not own (a kernel task, an open
// update) holds the model's life flag, as a destroy callback does: used
// after the model went, it refuses instead of touching the freed model.
inline bool model_gone(const std::shared_ptr<const std::atomic<bool>>& alive) noexcept {
  return alive && !alive->load(std::memory_order_acquire);
}
}  // namespace detail
/// @endcond

template <KEEL_CAPTURE_BACKEND B>
class basic_task_update_scope;

/**
 * @brief One kernel task of a model, made ready for per-step updates: found
 * and checked once (a kernel outside task groups, issued by stream::launch
 * with arguments that @p Args name, each the type a caller passes:
 * launch_argument maps it to what the launch stored), then `update(stream,
 * args...)` gives it new arguments and commits them in @p stream's order in
 * one call, under the rules of basic_task_update_scope (executions issued
 * to the stream before run the old arguments, those after the new; one
 * running keeps its own). It is what CUDA's kernel node handle with
 * cudaGraphExecKernelNodeSetParams and SYCL's dynamic_parameter with
 * update() give, and what CANN's aclmdlRITaskSetParams + aclmdlRIUpdate do
 * to one task. A task_update_scope of the model takes it as well
 * (set_arguments), to commit it together with other changes.
 *
 * On the host backend, when the update stream is idle and no execution
 * holds the model's current tasks, the arguments are written in place (no
 * new task table); otherwise the update is staged and committed as a
 * scope's would be. Either way the result is the same.
 *
 * Ownership: names a task of a model it does not own; the model must
 * outlive its use (as a task_info's pointers): it holds the model's life
 * flag, and update() after the model went throws invalid_handle instead of
 * touching it. Copyable. Thread safety: a value;
 * update() takes the model's update right for its duration, so concurrent
 * updates of one model are refused, never interleaved. Exceptions: the
 * constructor throws invalid_handle (an empty model), update_violation (the
 * model is being updated) or invalid_parameter (no such task, not a kernel,
 * in a task group, argument types other than @p Args); update() throws
 * invalid_handle (an empty stream, or the model was destroyed), update_violation, capture_violation (a
 * capturing stream), or invalid_parameter (a whole-model update or
 * set_from retyped the task since); the model is unchanged on every throw.
 *
 * @code
 * keel::host::kernel_task<float*, float> scale{model, model.tasks()[1]};
 * for (float alpha : steps) {
 *   scale.update(update_stream, x, alpha);  // the launch's argument types
 *   model.execute(update_stream);
 * }
 * @endcode
 */
template <KEEL_CAPTURE_BACKEND B, class... Args>
class basic_kernel_task {
  using UB = typename detail::model_update_backend<B>::type;
  static_assert(UB::typed_kernel_arguments,
                "keel::kernel_task: this backend's kernel tasks take no typed arguments (its runtime's argument "
                "block only): use task_update_scope's set_from or update_model");
  static_assert((std::is_same_v<Args, std::decay_t<Args>> && ...),
                "keel::kernel_task: name the arguments' types as a launch stores them (no references, no const)");

 public:
  /// What the task stores: each of Args as launch_argument maps it.
  using arguments_type = std::tuple<typename launch_argument<Args>::type...>;

  /**
   * @brief Finds and checks @p task (named as model.tasks() lists it) of
   * @p model. @throws keel::error update_violation, invalid_parameter (the
   * rule broken, and for other types the first argument that differs).
   */
  basic_kernel_task(basic_model_ref<B> model, const task_info& task)
      : model_(detail::checked_handle(model, "keel::kernel_task")),
        task_(task),
        index_(UB::template kernel_task_prepare<arguments_type>(
            model_, task, &::keel::detail::type_describer<arguments_type>::describe, sizeof...(Args))),
        alive_(B::model_life(model_)) {}

  /**
   * @brief Gives the task @p args and commits them in @p stream's order.
   * Checked at compile time: as many as Args names, each of its type (a
   * pointer may gain const, nullptr is a null pointer; no arithmetic
   * conversion: 5.5 is not a float).
   * @throws keel::error update_violation, capture_violation, invalid_parameter
   * (see the class); the model is then unchanged.
   */
  template <class... A>
  void update(basic_stream_ref<B> stream, A&&... args) {
    static_assert(detail::all_pass_as<std::tuple<A...>, std::tuple<Args...>>::value,
                  "keel::kernel_task::update: pass arguments of the types the kernel_task names (as many; the same "
                  "types, a pointer may gain const; no arithmetic conversion)");
    auto s = detail::checked_handle(stream, "keel::kernel_task::update");
    if (detail::model_gone(alive_))
      ::keel::detail::throw_composed(errc::invalid_handle, "keel::kernel_task::update",
                                     {"the model of this kernel_task (task ", task_.sequence, " of stream ",
                                      task_.stream, ") was destroyed; the kernel_task names nothing now"});
    const arguments_type values(launch_argument<Args>::store(std::forward<A>(args))...);
    UB::kernel_task_update(model_, index_, task_, s, values, &::keel::detail::describe_tuple<arguments_type>,
                           sizeof...(Args));
  }

  /// The task as it was named when this handle was made (its parameters then).
  const task_info& task() const noexcept { return task_; }

 private:
  friend class basic_task_update_scope<B>;
  typename B::model_handle model_;
  task_info task_;
  std::size_t index_;
  std::shared_ptr<const std::atomic<bool>> alive_;  // the model's life flag (null: a model keel did not capture)
};

/**
 * @brief Changes tasks of a captured model one by one and commits them
 * together: `set_arguments` gives a kernel task new arguments (of exactly
 * the types it was launched with), `set_copy` gives a copy task new
 * addresses and size, `disable` stops a kernel or copy task from running;
 * `end(stream)` commits every change in that stream's order (executions
 * issued to it before run the old tasks, those after run the new; an
 * execution already running keeps the tasks it started with).
 *
 * Tasks are named as `model.tasks()` lists them (their stream and sequence
 * id). On ACL a kernel takes new arguments when stream::launch issued it
 * while the model was captured or built (an operator's run_on is such a
 * launch: its task takes another executor's plan); its launch is issued
 * again with them and the task takes the parameters of the kernel task that
 * yields (aclmdlRITaskGetParams / SetParams / aclmdlRIUpdate). CANN's task
 * parameters have no copy task, so set_copy is refused there. The tasks of a task group are not changed here (an update_scope of
 * the group replaces them). Each call checks its rule and changes nothing
 * when it fails; a later change of the same task replaces an earlier one.
 * Finishes as every keel scope does: end() commits, cancel() abandons (the
 * model is unchanged), and a scope left without either abandons and, left
 * by a normal return, reports "left without end() or cancel()" (left by an
 * exception, nothing: the exception tells). The model must outlive the
 * scope: the scope holds the model's life flag, and a call after the model
 * went throws invalid_handle (cancel() and the destructor then do nothing).
 *
 * Ownership: holds the model's update right (one per-task or whole-model
 * update of a model at a time); not copyable or movable. Thread safety: one
 * thread uses the scope. Exceptions: the constructor throws update_violation
 * (the model is being updated); set_arguments / set_copy / disable / end
 * throw invalid_handle when the model was destroyed, invalid_parameter
 * naming the task and the rule; end() throws
 * capture_violation on a capturing stream (the update is then abandoned);
 * cancel() and the destructor throw nothing.
 *
 * @code
 * auto axpy = model.tasks()[0];
 * keel::host::task_update_scope update{model};
 * update.set_arguments(axpy, out, tmp, other, 5.5f);  // the launch's argument types
 * update.end(stream);
 * @endcode
 */
template <KEEL_CAPTURE_BACKEND B>
class [[nodiscard]] basic_task_update_scope {
  using UB = typename detail::model_update_backend<B>::type;

 public:
  /** @brief Begins an update of @p model. @throws keel::error update_violation when the model is being updated. */
  explicit basic_task_update_scope(basic_model_ref<B> model)
      : model_(detail::checked_handle(model, "keel::task_update_scope")), alive_(B::model_life(model_)) {
    UB::task_update_begin(model_);
  }
  basic_task_update_scope(const basic_task_update_scope&) = delete;
  basic_task_update_scope& operator=(const basic_task_update_scope&) = delete;
  /// Left while still active: abandons the update and, after a normal return, reports it (see the class).
  ~basic_task_update_scope() {
    if (!active_) return;
    cancel();
    detail::report_scope_left_unfinished("keel::task_update_scope", "the update was abandoned, the model is unchanged",
                                         std::uncaught_exceptions() > 0);
  }

  /**
   * @brief Stages new arguments for kernel task @p task: exactly as many as
   * its launch had, of the same types (decayed, as a launch stores them;
   * keel::launch_argument maps a type a backend's launch wraps, such as an
   * ACL executor's plan).
   * @throws keel::error invalid_state (scope finished), invalid_parameter
   * (no such task, not a kernel, in a task group, other argument types).
   */
  template <class... Args>
  void set_arguments(const task_info& task, Args&&... args) {
    require_active("keel::task_update_scope::set_arguments");
    using tuple_type = std::tuple<typename launch_argument<std::decay_t<Args>>::type...>;
    const tuple_type values(launch_argument<std::decay_t<Args>>::store(std::forward<Args>(args))...);
    UB::task_update_set_kernel(model_, task, values, &detail::describe_tuple<tuple_type>, sizeof...(Args));
  }

  /**
   * @brief Stages new arguments for the kernel task @p task was made for
   * (of the types it names, checked at compile time as by its update()).
   * @throws keel::error invalid_state (scope finished), invalid_parameter
   * (a kernel_task of another model, or its task was retyped since).
   */
  template <class... KernelArgs, class... A>
  void set_arguments(const basic_kernel_task<B, KernelArgs...>& task, A&&... args) {
    static constexpr const char* api = "keel::task_update_scope::set_arguments";
    static_assert(detail::all_pass_as<std::tuple<A...>, std::tuple<KernelArgs...>>::value,
                  "keel::task_update_scope::set_arguments: pass arguments of the types the kernel_task names (as "
                  "many; the same types, a pointer may gain const; no arithmetic conversion)");
    require_active(api);
    if (task.model_ != model_)
      throw_error(errc::invalid_parameter, api, "the kernel_task names a task of another model; the model is unchanged");
    using tuple_type = typename basic_kernel_task<B, KernelArgs...>::arguments_type;
    const tuple_type values(launch_argument<KernelArgs>::store(std::forward<A>(args))...);
    UB::task_update_set_prepared(model_, task.index_, task.task_, values, &detail::describe_tuple<tuple_type>,
                                 sizeof...(KernelArgs));
  }

  /**
   * @brief Stages new addresses and size for copy task @p task (same
   * direction); the caller keeps the memory alive as long as the model.
   * @throws keel::error invalid_state, invalid_parameter, null_parameter.
   */
  void set_copy(const task_info& task, void* dst, const void* src, std::size_t bytes) {
    require_active("keel::task_update_scope::set_copy");
    UB::task_update_set_copy(model_, task, dst, src, bytes, task.copy.kind, nullptr, nullptr);
  }
  /**
   * @brief Stages a copy of @p src into @p dst for copy task @p task: the
   * spans' owners live as long as the task. @throws keel::error
   * invalid_parameter (dst smaller than src, another direction, ...).
   */
  void set_copy(const task_info& task, const memory_span& dst, const memory_span& src) {
    static constexpr const char* api = "keel::task_update_scope::set_copy";
    require_active(api);
    if (dst.bytes < src.bytes)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"the destination (", dst.bytes, " bytes) is smaller than the source (", src.bytes,
                                      " bytes); the task is unchanged"});
    UB::task_update_set_copy(model_, task, dst.data, src.data, src.bytes, copy_direction(dst.where, src.where),
                             dst.owner, src.owner);
  }

  /** @brief Stages disabling kernel or copy task @p task (new parameters enable it again). @throws keel::error invalid_parameter. */
  void disable(const task_info& task) {
    require_active("keel::task_update_scope::disable");
    UB::task_update_disable(model_, task);
  }

  /**
   * @brief Commits every staged change in @p stream's order; the scope is
   * finished whatever the outcome. An update with no change changes nothing.
   * @throws keel::error invalid_state (already finished), capture_violation
   * (a capturing stream: abandoned, the model unchanged).
   */
  void end(basic_stream_ref<B> stream) {
    static constexpr const char* api = "keel::task_update_scope::end";
    require_active(api);
    auto s = detail::checked_handle(stream, api);
    active_ = false;
    UB::task_update_end(model_, s);
  }
  /** @brief Abandons the update; the model is unchanged; nothing when not active. Throws: nothing. */
  void cancel() noexcept {
    if (active_ && !detail::model_gone(alive_)) UB::task_update_abort(model_);  // a destroyed model's update went with it
    active_ = false;
  }
  /// Whether the update is still open (neither end() nor cancel() finished it).
  bool active() const noexcept { return active_; }
  /// The model the scope updates. Throws: nothing.
  basic_model_ref<B> model() const noexcept { return basic_model_ref<B>(detail::from_handle, model_); }

 private:
  void require_active(const char* api) const {
    if (!active_) throw_error(errc::invalid_state, api, "the update already ended (end() or cancel())");
    if (detail::model_gone(alive_))
      throw_error(errc::invalid_handle, api, "the model this task_update_scope updates was destroyed; the update went with it");
  }
  typename B::model_handle model_;
  std::shared_ptr<const std::atomic<bool>> alive_;  // the model's life flag (null: a model keel did not capture)
  bool active_ = true;
};

/**
 * @brief Replaces every task of @p target with the task of @p source at the
 * same place, in @p stream's order (executions issued to it before run the
 * old tasks, those after the new ones; a running execution keeps its own).
 * @p source must have the topology of @p target: the same streams, in each
 * the same task kinds in the same order (kernel kinds, task-group
 * membership), the same event pairing, captured in the same interleaving.
 * Task groups keep their tasks (their updates set them). @p source stays
 * usable; what its tasks use lives as long as either model runs them.
 *
 * @throws keel::error update_violation naming the first mismatching task
 * (its stream, sequence id, the expected and the found kind) or a target
 * being updated, capture_violation (a capturing stream), invalid_parameter
 * (target and source are one model); the target is then unchanged.
 */
template <KEEL_CAPTURE_BACKEND B>
void update_model(basic_model_ref<B> target, basic_model_ref<B> source, basic_stream_ref<B> stream) {
  static constexpr const char* api = "keel::update_model";
  using UB = typename detail::model_update_backend<B>::type;
  UB::update_model(detail::checked_handle(target, api), detail::checked_handle(source, api),
                   detail::checked_handle(stream, api));
}

/**
 * @def KEEL_RUNTIME_MODEL_UPDATE_ALIASES
 * @brief Declares `task_update_scope` and `kernel_task` for @p Backend in the enclosing
 * namespace (what keel/host/host.hpp does for the host backend).
 */
#define KEEL_RUNTIME_MODEL_UPDATE_ALIASES(Backend)                   \
  using task_update_scope = ::keel::basic_task_update_scope<Backend>; \
  template <class... Args>                                            \
  using kernel_task = ::keel::basic_kernel_task<Backend, Args...>;

KEEL_END_NAMESPACE  // namespace keel
