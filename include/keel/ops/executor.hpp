// SPDX-License-Identifier: Apache-2.0
// The executor: what phase one of a two-phase operator call returns. It has
// checked everything, knows its workspace size, and runs in chunks that a
// pool of compute workers can share.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/ops/detail/call_record.hpp"
#include "keel/ops/detail/plan_key.hpp"
#include "keel/ops/op_table.hpp"
#include "keel/ops/tensor.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

/**
 * @brief Whether an executor may run more than once. The device API's
 * executors are single-use unless marked repeatable; keel makes the choice
 * explicit at phase one and enforces it at phase two.
 */
enum class executor_use : std::uint8_t {
  once,        ///< a second run() is an invalid_state error
  repeatable,  ///< runs any number of times (what a cache or a captured model needs)
};

/**
 * @brief The compute workers an executor is sized for unless told otherwise:
 * the machine's hardware threads, which is what the default host device
 * (keel::host::default_device()) has. Read once per process. Throws: nothing.
 */
inline std::size_t default_workers() noexcept {
  static const std::size_t n = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  return n;
}

/** @brief Phase-one settings. */
struct prepare_options {
  /// Compute workers phase two may split its chunks across (a launch uses
  /// the fewer of this and the device's); the workspace holds one scratch
  /// slice per worker. The default splits large work across every core, as
  /// a device kernel uses all of its device; 1 keeps phase two on one thread.
  std::size_t workers = default_workers();
  /// Whether the executor is run many times (repeatable) or once.
  executor_use use = executor_use::repeatable;
};

/** @brief Workspace pointers handed to executors are aligned to this many bytes internally. */
inline constexpr std::size_t workspace_alignment = 64;

namespace detail {

/**
 * What an operator's phase one builds. Work is a sequence of stages (a stage
 * starts after the previous one finished on every worker); each stage is a
 * number of independent chunks.
 */
class plan {
 public:
  virtual ~plan() = default;
  virtual std::size_t stage_count() const noexcept { return 1; }
  virtual std::size_t chunk_count(std::size_t stage) const noexcept = 0;
  // `shared` holds shared_bytes (stages pass data through it), `scratch`
  // this worker's scratch_bytes.
  virtual void run_chunk(std::size_t stage, std::size_t chunk, char* shared, char* scratch) const = 0;
  // A copy to bind another call's pointers and scalars into (an executor
  // cache hit): plans shared with queued or captured work never change.
  virtual std::shared_ptr<plan> clone() const = 0;

  op_kind op = op_kind::add;
  std::size_t shared_bytes = 0;
  std::size_t scratch_bytes = 0;  // per worker
  call_record call;  // the call phase one (or a cache hit's bind) made it for: dumps, operator tasks
};

constexpr std::size_t round_up(std::size_t n, std::size_t to) noexcept { return (n + to - 1) / to * to; }

// The workspace layout's size: alignment slack, the shared part, then one
// scratch slice per worker (at least one: phase two always has worker 0).
inline checked_size workspace_bytes(const plan& p, std::size_t workers) noexcept {
  if (p.shared_bytes == 0 && p.scratch_bytes == 0) return 0;
  return checked_size(workspace_alignment) + checked_size(p.shared_bytes).round_up(workspace_alignment) +
         checked_size(std::max<std::size_t>(workers, 1)) * checked_size(p.scratch_bytes).round_up(workspace_alignment);
}

}  // namespace detail

struct kernel_table;

/// @cond
namespace detail {
// Whether exec() binds Op's calls into the launch (Op::binds_at_launch).
template <class Op, class = void>
struct binds_at_launch : std::false_type {};
template <class Op>
struct binds_at_launch<Op, std::void_t<decltype(Op::binds_at_launch)>> : std::bool_constant<Op::binds_at_launch> {};
}  // namespace detail
/// @endcond

template <class Layer>
class basic_executor;

/**
 * @brief The host operator layer: keel's reference operators, planned
 * against a kernel table (phase one) and launched as one kernel whose chunks
 * split across the launch context's compute workers (phase two; any backend
 * whose launch context has parallel_for() and workers(): the host backend and
 * decorators over it). basic_executor, run_on, exec and the executor caches
 * reach a backend's operators through a layer like this one (ACL's:
 * keel::acl::aclnn_operators).
 *
 * Ownership: none (static members). Thread safety: every member is as
 * thread-safe as the plan and stream it is given. Exceptions: launch() throws
 * what the stream's launch throws.
 */
struct host_operators {
  /// What phase one builds.
  using plan_type = detail::plan;
  /// What phase one plans against.
  using target_type = const kernel_table;
  /** @brief Bytes of workspace @p p needs when split across @p workers (unchecked sum). Throws: nothing. */
  static detail::checked_size workspace_bytes(const plan_type& p, std::size_t workers) noexcept {
    return detail::workspace_bytes(p, workers);
  }
  /** @brief Phase two of @p p on @p stream (launch.hpp). @throws keel::error what the stream's launch throws. */
  template <class Stream, class Span>
  static void launch(const Stream& stream, const std::shared_ptr<const plan_type>& p, const Span& workspace,
                     std::size_t workers);

  /** @brief Phase one of @p Op against @p kernels. @throws keel::error as the operator's prepare_*. */
  template <class Op, class... Args>
  static auto prepare(const kernel_table& kernels, const prepare_options& options, const Args&... args) {
    return Op::prepare(kernels, options, args...);
  }
  /** @brief An executor cache's key of a call of @p Op (no pointers or scalar values: a hit binds them). */
  template <class Op, class... Args>
  static detail::plan_key key(const Args&... args) noexcept {
    return Op::key(args...);
  }
  /** @brief A copy of @p cached bound to this call's memory and scalars. @throws keel::error as Op's checks. */
  template <class Op, class... Args>
  static std::shared_ptr<const plan_type> bind(const std::shared_ptr<const plan_type>& cached, const Args&... args) {
    return Op::bind(*cached, args...);
  }
  /** @brief Whether exec() launches @p Op's cached plan with the call carried by the task. */
  template <class Op>
  static constexpr bool binds_at_launch() noexcept {
    return detail::binds_at_launch<Op>::value;
  }
};

/// The host operators' executor (keel 0.1's name; basic_executor<host_operators>).
using executor = basic_executor<host_operators>;

/**
 * @brief A validated operator call, ready for phase two, on the backend
 * whose operator layer is @p Layer (host_operators: keel::ops::executor;
 * ACL's aclnn: keel::acl::executor). Phase one (prepare_*) makes it; run_on,
 * exec and the executor caches take it whatever the layer.
 *
 * Ownership: move-only; owns its plan (shared, so a stream task that runs it
 * can keep it alive), not the tensors' memory. Thread safety: one thread runs
 * an executor at a time; the chunks of one run may execute on many workers at
 * once. Exceptions: run() throws keel::error before touching memory; chunks never throw.
 * An empty executor (default-constructed or moved from) is false, has no
 * workspace and no runs; op(), stage_count(), chunk_count() and run() throw
 * invalid_state on it. stage_count(), chunk_count(), run_chunk() and run()
 * (phase two on the calling thread) exist for plans that run in chunks on the
 * host (host_operators) only.
 *
 * @code
 * ops::executor ex = ops::prepare_add(kernels, self, other, 1.0f, out);  // phase one
 * std::vector<std::byte> ws(ex.workspace_size());
 * ex.run(ws.data(), ws.size());                                          // phase two
 * @endcode
 */
template <class Layer>
class basic_executor {
 public:
  /// The operator layer (what plans and launches).
  using layer_type = Layer;
  /// What phase one built.
  using plan_type = typename Layer::plan_type;

  basic_executor() noexcept = default;
  /// An executor of @p plan prepared with @p options.
  basic_executor(std::shared_ptr<const plan_type> plan, prepare_options options) noexcept
      : plan_(std::move(plan)), options_(options) {}
  /// Takes @p other's plan and run count; @p other is left empty.
  basic_executor(basic_executor&& other) noexcept
      : plan_(std::move(other.plan_)), options_(other.options_), runs_(other.runs_.load(std::memory_order_relaxed)) {
    other.runs_.store(0, std::memory_order_relaxed);
  }
  /// Drops the plan held, then takes the other executor's plan and run count; the other is left empty.
  basic_executor& operator=(basic_executor&& other) noexcept {
    if (this != &other) {
      plan_ = std::move(other.plan_);
      options_ = other.options_;
      runs_.store(other.runs_.load(std::memory_order_relaxed), std::memory_order_relaxed);
      other.runs_.store(0, std::memory_order_relaxed);
    }
    return *this;
  }
  basic_executor(const basic_executor&) = delete;
  basic_executor& operator=(const basic_executor&) = delete;

  /// Whether this holds a handle.
  explicit operator bool() const noexcept { return plan_ != nullptr; }
  /** @brief The operator. @throws keel::error invalid_state on an empty executor, as run() does. */
  op_kind op() const { return planned("keel::ops::executor::op").op; }
  /// Whether the executor is run many times (repeatable) or once.
  executor_use use() const noexcept { return options_.use; }
  /// The compute workers phase two may split across.
  std::size_t workers() const noexcept { return options_.workers; }
  /** @brief How many times run() started. */
  std::size_t runs() const noexcept { return runs_.load(std::memory_order_relaxed); }

  /**
   * @brief Bytes of workspace phase two needs (0: none; pass any pointer).
   * Phase one refuses plans whose workspace does not fit (check_workspace);
   * an executor made from one anyway reports SIZE_MAX, which no workspace meets.
   */
  std::size_t workspace_size() const noexcept {
    if (!plan_) return 0;
    const detail::checked_size need = Layer::workspace_bytes(*plan_, options_.workers);
    return need.fits() ? need.value() : SIZE_MAX;
  }

  /** @brief Stages of phase two. @throws keel::error invalid_state on an empty executor. */
  std::size_t stage_count() const { return planned("keel::ops::executor::stage_count").stage_count(); }
  /** @brief Chunks of stage `stage`. @throws keel::error invalid_state on an empty executor. */
  std::size_t chunk_count(std::size_t stage) const {
    return planned("keel::ops::executor::chunk_count").chunk_count(stage);
  }

  /**
   * @brief Runs one chunk on worker `worker` (< workers()). For pools that
   * schedule chunks themselves; call begin_run() once before the first
   * (it refuses an empty executor, which this does not check again).
   * @note Throws: nothing.
   */
  void run_chunk(std::size_t stage, std::size_t chunk, std::size_t worker, void* workspace) const noexcept {
    char* base = aligned(workspace);
    char* shared = base;
    char* scratch = base == nullptr ? nullptr
                                    : base + detail::round_up(plan_->shared_bytes, workspace_alignment) +
                                          worker * detail::round_up(plan_->scratch_bytes, workspace_alignment);
    plan_->run_chunk(stage, chunk, shared, scratch);
  }

  /**
   * @brief Checks that this executor may run now with this workspace and
   * counts the run. @throws keel::error invalid_state (a once-executor that
   * already ran, an empty executor), invalid_parameter (workspace too small),
   * null_parameter (null workspace when one is needed).
   */
  void begin_run(const void* workspace, std::size_t workspace_bytes) {
    // The common case inline (a repeatable executor, a workspace that
    // fits); every rule and error in begin_checked_run.
    if (plan_ && options_.use == executor_use::repeatable) {
      const std::size_t need = workspace_size();
      if ((need == 0 || workspace != nullptr) && workspace_bytes >= need) {
        runs_.store(runs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        return;
      }
    }
    begin_checked_run(workspace, workspace_bytes);
  }

  /**
   * @brief Phase two on the calling thread: every stage, every chunk, worker 0.
   * @throws keel::error as begin_run().
   */
  void run(void* workspace, std::size_t workspace_bytes) {
    run(workspace, workspace_bytes, [](std::size_t count, auto&& body) {
      for (std::size_t i = 0; i < count; ++i) body(i, std::size_t{0});
    });
  }

  /**
   * @brief Phase two through a worker pool: for each stage, calls
   * `for_each(count, body)`, which must call body(chunk, worker) for every
   * chunk in [0, count) with worker < workers() (no two concurrent calls with
   * the same worker) and return when all finished.
   * @throws keel::error as begin_run(), and whatever for_each throws.
   */
  template <class ForEach>
  void run(void* workspace, std::size_t workspace_bytes, ForEach&& for_each) {
    begin_run(workspace, workspace_bytes);
    for (std::size_t s = 0; s < plan_->stage_count(); ++s) {
      const std::size_t count = plan_->chunk_count(s);
      if (count == 0) continue;
      for_each(count, [this, s, workspace](std::size_t chunk, std::size_t worker) {
        run_chunk(s, chunk, worker, workspace);
      });
    }
  }

  /** @brief The plan, for a stream task that must keep it alive. */
  const std::shared_ptr<const plan_type>& plan() const noexcept { return plan_; }

 private:
  // begin_run's rules, out of line: a once-executor counts with a locked
  // read-modify-write, everything else that is refused throws here.
  void begin_checked_run(const void* workspace, std::size_t workspace_bytes) {
    const char* api = "keel::ops::executor::run";
    planned(api);
    const std::size_t need = workspace_size();
    if (need != 0 && workspace == nullptr) throw_error(errc::null_parameter, api, "workspace is null");
    if (workspace_bytes < need) {
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"workspace has ", workspace_bytes, " bytes, the executor needs ", need});
    }
    if (options_.use == executor_use::once && runs_.fetch_add(1, std::memory_order_acq_rel) != 0) {
      throw_error(errc::invalid_state, api, "this executor was prepared with executor_use::once and already ran");
    }
    // One thread runs an executor at a time, so a repeatable run counts
    // without a locked read-modify-write (the once check above needs one).
    if (options_.use == executor_use::repeatable)
      runs_.store(runs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // The plan, or the empty executor's invalid_state error naming `api`.
  const plan_type& planned(const char* api) const {
    if (!plan_) throw_error(errc::invalid_state, api, "the executor is empty (moved from or never prepared)");
    return *plan_;
  }

  static char* aligned(void* p) noexcept {
    if (p == nullptr) return nullptr;
    const auto v = reinterpret_cast<std::uintptr_t>(p);
    return static_cast<char*>(p) + (detail::round_up(v, workspace_alignment) - v);
  }

  std::shared_ptr<const plan_type> plan_;
  prepare_options options_;
  std::atomic<std::size_t> runs_{0};
};

} KEEL_END_NAMESPACE  // namespace keel::ops

KEEL_BEGIN_NAMESPACE

/**
 * @brief A host operator launch's plan argument (run_on's), in
 * descriptions and refusals: named as the layer's plan, and described as the
 * operator call it was prepared for (a dump's operator, tensors and scalars).
 */
template <>
struct argument_traits<std::shared_ptr<const ops::detail::plan>> {
  /// The type's name in descriptions and refusals.
  static constexpr std::string_view name = "std::shared_ptr<const keel::ops::host_operators::plan_type>";
  /** @brief What the description keeps: the plan. Throws: nothing. */
  static std::shared_ptr<const void> operator_object(const std::shared_ptr<const ops::detail::plan>& p) noexcept {
    return p;
  }
  /** @brief The call the plan behind @p object runs. @throws std::bad_alloc. */
  static void describe_operator(const void* object, operator_call& out) {
    const auto& p = *static_cast<const ops::detail::plan*>(object);
    ops::detail::describe_call(p.call, function_name(p.op), out);
  }

 private:
  // "keel.ops.<name>": the kernel kind its launch carries.
  static std::string_view function_name(ops::op_kind op) noexcept {
    switch (op) {
#define KEEL_OPS_DETAIL_FUNCTION(name, aclnn) \
  case ops::op_kind::name: return "keel.ops." #name;
      KEEL_OPS_OPERATORS(KEEL_OPS_DETAIL_FUNCTION)
#undef KEEL_OPS_DETAIL_FUNCTION
    }
    return "keel.ops";
  }
};

KEEL_END_NAMESPACE
