// SPDX-License-Identifier: Apache-2.0
// An operator's task in a captured model, made ready for per-step updates
// with new executors of the same operator: what a graph runner keeps per
// updated operator (an attention or convolution layer whose executor changes
// every step), on any backend, without naming the arguments its launch
// stores there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/ops/detail/call_record.hpp"
#include "keel/ops/executor.hpp"
#include "keel/ops/launch.hpp"
#include "keel/runtime/buffer.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/model_tasks.hpp"
#include "keel/runtime/model_update.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/stream_allocator.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief One operator task of a captured model (a run_on launch, named as
 * `model.tasks()` lists it), made ready for per-step updates: found and
 * checked once, then `update(stream, ex)` gives it executor @p ex's plan and
 * workspace and commits them in @p stream's order, in one call, as
 * kernel_task's update does (executions issued to the stream before run the
 * old call, those after the new; one running keeps its own). `stage(scope,
 * ex)` stages the same change in a task_update_scope of the model, to commit
 * with other changes. Works alike on every backend with per-task updates:
 * the launch's arguments are whatever the executor's operator layer passes
 * its stream (ops::run_on's own path), never named by the caller.
 *
 * Each update checks, before changing anything, that @p ex is an executor of
 * the operator the task was captured with, over tensors of the same dtypes
 * and shapes (addresses, strides, scalars and the workspace may differ),
 * repeatable, and launched the way the task was (on the host backend an
 * operator that needs no workspace launches without one, so a task
 * captured with a workspace takes only executors that need one, and the
 * other way round); each refusal names the operator, the tensor and both
 * dtypes and shapes. The workspace: as ops::run_on takes it, a span the
 * caller provides (of at least ex.workspace_size() bytes, kept alive by the
 * launch as run_on's is) or one allocated on the update stream (the pool
 * registered as its allocator, else the device) and released in its order.
 *
 * Ownership: names a task of a model it does not own; the model must
 * outlive it. Copyable. Thread safety: a value; update() takes the model's
 * update right for its duration (concurrent updates of one model are
 * refused, never interleaved). Exceptions: the constructor throws
 * invalid_handle (an empty model), update_violation (the model is being
 * updated), invalid_parameter (no such task, not a kernel, in a task group,
 * arguments that cannot be replaced, not an operator launch); update() and
 * stage() throw invalid_parameter (another operator, dtype or shape, an
 * empty or once-only executor, a workspace too small), update_violation,
 * capture_violation (a capturing stream), and what run_on's workspace
 * allocation throws; the model is unchanged on every throw.
 *
 * @code
 * keel::ops::basic_operator_task<backend> attention{model, model.tasks()[3]};
 * for (auto& step : steps) {
 *   auto ex = keel::ops::prepare_baddbmm(target, q, k, v, beta, alpha, out);  // this step's call
 *   attention.update(stream, ex);  // its workspace allocated in the stream's order
 *   model.execute(stream);
 * }
 * @endcode
 */
template <KEEL_CAPTURE_BACKEND B>
class basic_operator_task {
  using UB = typename ::keel::detail::model_update_backend<B>::type;

 public:
  /**
   * @brief Finds and checks @p task (named as model.tasks() lists it) of
   * @p model: a kernel task a run_on launch issued, whose call it keeps.
   * @throws keel::error update_violation, invalid_parameter (the rule broken).
   */
  basic_operator_task(basic_model_ref<B> model, const task_info& task)
      : model_(::keel::detail::checked_handle(model, "keel::ops::operator_task")), model_id_(model.id()), task_(task) {
    static constexpr const char* api = "keel::ops::operator_task";
    bool found_operator = false;
    index_ = UB::prepared_task_locate(model_, task, api, [&](const task_info& found) {
      kind_ = std::string(found.kernel.kind.name());
      for (std::size_t i = 0; i < found.kernel.argument_count; ++i) {
        const kernel_argument& a = found.kernel.arguments[i];
        if (a.is_operator() && !found_operator) {
          captured_ = a.describe();
          found_operator = true;
        }
        if (a.cls == argument_class::span && a.bytes != 0) with_workspace_ = true;
        if (a.cls == argument_class::pointer && a.address != nullptr) with_workspace_ = true;
      }
      arguments_ = found.kernel.argument_count;
    });
    if (!found_operator)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {where(), ", kernel '", kind_,
                                      "', was not launched by an operator (ops::run_on): no argument describes an "
                                      "operator call; name an operator's task, or use kernel_task"});
  }

  /**
   * @brief Gives the task @p ex's plan and @p workspace (at least
   * ex.workspace_size() bytes; its owner, if any, kept alive by the launch)
   * and commits them in @p stream's order.
   * @throws keel::error invalid_parameter, null_parameter, update_violation,
   * capture_violation (see the class); the model is then unchanged.
   */
  template <class Layer>
  void update(basic_stream_ref<B> stream, const basic_executor<Layer>& ex, const memory_span& workspace) {
    static constexpr const char* api = "keel::ops::operator_task::update";
    auto s = ::keel::detail::checked_handle(stream, api);
    check(ex, workspace, api);
    Layer::launch(issue_update{this, s, nullptr, api}, ex.plan(), workspace, ex.workers());
  }
  /**
   * @brief The same with a workspace allocated on @p stream and released in
   * its order when this returns (as ops::run_on allocates it).
   * @throws keel::error as update(stream, ex, workspace), out_of_memory.
   */
  template <class Layer>
  void update(basic_stream_ref<B> stream, const basic_executor<Layer>& ex) {
    check_call(ex, "keel::ops::operator_task::update");  // before allocating a workspace sized for a refused executor
    with_workspace(stream, ex, [&](const memory_span& ws) { update(stream, ex, ws); });
  }

  /**
   * @brief Stages @p ex's plan and @p workspace for the task in @p scope (an
   * update of this task's model), committed by its end().
   * @throws keel::error invalid_state (the scope finished), invalid_parameter
   * (a scope of another model, or as update()); nothing is staged then.
   */
  template <class Layer>
  void stage(basic_task_update_scope<B>& scope, const basic_executor<Layer>& ex, const memory_span& workspace = {}) {
    static constexpr const char* api = "keel::ops::operator_task::stage";
    if (!scope.active()) throw_error(errc::invalid_state, api, "the update already ended (end() or cancel())");
    if (::keel::detail::handle_access::get(scope.model()) != model_)
      throw_error(errc::invalid_parameter, api,
                  "the scope updates another model than the operator task's; the model is unchanged");
    check(ex, workspace, api);
    Layer::launch(issue_update{this, typename B::stream_handle{}, &scope, api}, ex.plan(), workspace, ex.workers());
  }

  /// The task as it was named when this handle was made (its parameters then).
  const task_info& task() const noexcept { return task_; }
  /// The operator call the task was captured with (its operator, tensors and scalars then).
  const operator_call& captured() const noexcept { return captured_; }

 private:
  // What the executor's layer launches on: instead of enqueuing, the
  // launch's arguments become the task's (updated now, or staged in a scope).
  struct issue_update {
    using backend_type = B;
    basic_operator_task* self;
    typename B::stream_handle stream;
    basic_task_update_scope<B>* scope;
    const char* api;

    template <class F, class... A>
    void launch(kernel_kind kind, F&&, A&&... args) const {
      using tuple_type = std::tuple<std::decay_t<A>...>;
      if (kind.name() != self->captured_.function)
        ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                       {self->where(), " runs ", self->captured_.function,
                                        " and the executor launches ", kind.name(),
                                        " (an executor of another operator layer); the model is unchanged"});
      const tuple_type values(std::forward<A>(args)...);
      if (sizeof...(A) != self->arguments_)
        ::keel::detail::throw_composed(
            errc::invalid_parameter, api,
            {self->where(), " (", self->captured_.op, ") was captured ",
             (self->with_workspace_ ? "with a workspace" : "without a workspace"), " and the executor launches ",
             (self->with_workspace_ ? "without one (it needs none)" : "with one (it needs one)"),
             ": an operator task keeps its launch's form; capture it with such an executor; the model is unchanged"});
      if (scope == nullptr) {
        UB::kernel_task_update(self->model_, self->index_, self->task_, stream, values,
                               &::keel::detail::describe_tuple<tuple_type>, sizeof...(A), api, "operator_task");
      } else {
        UB::task_update_set_prepared(::keel::detail::handle_access::get(scope->model()), self->index_, self->task_,
                                     values, &::keel::detail::describe_tuple<tuple_type>, sizeof...(A), api,
                                     "operator_task");
      }
    }
  };

  // The rules an executor meets before anything changes: not empty,
  // repeatable, the captured operator over tensors of the same dtypes and
  // shapes, a workspace large enough.
  template <class Layer>
  void check(const basic_executor<Layer>& ex, const memory_span& workspace, const char* api) const {
    check_call(ex, api);
    const std::size_t need = ex.workspace_size();
    if (need != 0 && workspace.data == nullptr)
      ::keel::detail::throw_composed(errc::null_parameter, api,
                                     {"the ", captured_.op, " executor needs a workspace of ", need,
                                      " bytes and none was given; the model is unchanged"});
    if (workspace.bytes < need)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"the workspace has ", workspace.bytes, " bytes and the ", captured_.op,
                                      " executor needs ", need, "; the model is unchanged"});
  }
  template <class Layer>
  void check_call(const basic_executor<Layer>& ex, const char* api) const {
    if (!ex) throw_error(errc::invalid_parameter, api, "the executor is empty (moved from or never prepared)");
    const detail::call_record& record = ex.plan()->call;
    if (!record.signature)
      throw_error(errc::invalid_parameter, api, "the executor's plan records no operator call; the model is unchanged");
    const detail::call_signature& call = *record.signature;
    if (ex.use() != executor_use::repeatable)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"the ", op_name(call.op),
                                      " executor was prepared with executor_use::once and a model runs its task at "
                                      "every execution; prepare it with executor_use::repeatable; the model is "
                                      "unchanged"});
    if (std::string_view(op_name(call.op)) != captured_.op)
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {where(), " runs operator ", captured_.op, " and the executor is ",
                                      op_name(call.op), ": an operator task keeps its operator; the model is unchanged"});
    for (std::size_t i = 0; i < call.tensor_count && i < captured_.tensors.size(); ++i) {
      const operator_tensor& was = captured_.tensors[i];
      const tensor& now = call.tensors[i];
      bool same = std::string_view(dtype_name(now.type())) == was.dtype && now.dim() == was.shape.size();
      for (std::size_t d = 0; same && d < now.dim(); ++d) same = now.size(d) == was.shape[d];
      if (!same)
        ::keel::detail::throw_composed(
            errc::invalid_parameter, api,
            {where(), ", operator ", captured_.op, ": tensor '", was.name, "' was captured as ", was.dtype, " ",
             shape_text(was.shape.data(), was.shape.size()), " and the executor's is ", dtype_name(now.type()), " ",
             shape_text(now.sizes(), now.dim()),
             ": an operator task keeps its tensors' dtypes and shapes (its launch was sized for them); the model is "
             "unchanged"});
    }
  }

  // Calls @p fn with a workspace for @p ex allocated on @p stream and
  // released in its order when @p fn returns: ops::run_on's allocation.
  template <class Layer, class F>
  static void with_workspace(basic_stream_ref<B> stream, const basic_executor<Layer>& ex, F&& fn) {
    const std::size_t bytes = ex ? ex.workspace_size() : 0;
    if (bytes == 0) return fn(memory_span{});
    if constexpr (is_memory_pool_backend_v<B>) {
      if (const basic_memory_pool_ref<B> pool = registered_pool(stream)) {
        const basic_pool_buffer<B> workspace = pool.allocate(stream, bytes);
        fn(workspace.span());
        return;
      }
    }
    basic_device_buffer<B> workspace(stream, bytes);
    fn(workspace.span());
  }

  std::string where() const {
    return "task (stream " + std::to_string(task_.stream) + ", sequence " + std::to_string(task_.sequence) +
           ") of model #" + std::to_string(model_id_);
  }
  static std::string shape_text(const std::int64_t* sizes, std::size_t n) {
    std::string s = "[";
    for (std::size_t i = 0; i < n; ++i) s += (i == 0 ? "" : ", ") + std::to_string(sizes[i]);
    return s + "]";
  }

  typename B::model_handle model_;
  std::uint64_t model_id_;
  task_info task_;
  std::size_t index_ = 0;
  std::string kind_;
  operator_call captured_;
  std::size_t arguments_ = 0;
  bool with_workspace_ = false;
};

} KEEL_END_NAMESPACE  // namespace keel::ops
