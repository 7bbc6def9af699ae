// SPDX-License-Identifier: Apache-2.0
// keel's operators through ACL's two-phase aclnn calls: owning handles for
// aclTensor / aclScalar / aclIntArray, and ACL's operator layer
// (aclnn_operators): phase one (keel::ops::prepare_<op>(dev, ...):
// aclnn<Op>GetWorkspaceSize) and phase two (keel::ops::run_on: aclnn<Op> on
// an ACL stream, as one launch, so capture and task-group update see it),
// with the aclnn bindings generated from the operator table (ops/op_table.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "keel/acl/backend.hpp"
#include "keel/ops/detail/call_record.hpp"
#include "keel/ops/detail/plan_key.hpp"
#include "keel/ops/dtype.hpp"
#include "keel/ops/executor.hpp"
#include "keel/ops/op_table.hpp"
#include "keel/ops/operator_layer.hpp"
#include "keel/ops/operators.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"
#include "keel/runtime/backend/detection.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

/** @brief The aclDataType of a keel dtype (acl_base.h values). Throws: nothing. */
constexpr data_type data_type_of(keel::ops::dtype t) noexcept {
  switch (t) {
    case keel::ops::dtype::float32: return data_type::float32;
    case keel::ops::dtype::float16: return data_type::float16;
    case keel::ops::dtype::bfloat16: return data_type::bfloat16;
    case keel::ops::dtype::int32: return data_type::int32;
    case keel::ops::dtype::int64: return data_type::int64;
    case keel::ops::dtype::int8: return data_type::int8;
    case keel::ops::dtype::uint8: return data_type::uint8;
    case keel::ops::dtype::boolean: return data_type::boolean;
  }
  return data_type::undefined;
}

/// @cond
namespace detail {
template <class T>
struct acl_deleter {
  device* dev = nullptr;
  void operator()(T* p) const noexcept;
};
template <>
inline void acl_deleter<::aclTensor>::operator()(::aclTensor* p) const noexcept {
  dev->functions().aclDestroyTensor.get()(p);
}
template <>
inline void acl_deleter<::aclScalar>::operator()(::aclScalar* p) const noexcept {
  dev->functions().aclDestroyScalar.get()(p);
}
template <>
inline void acl_deleter<::aclIntArray>::operator()(::aclIntArray* p) const noexcept {
  dev->functions().aclDestroyIntArray.get()(p);
}
template <class T>
using acl_owner = std::unique_ptr<T, acl_deleter<T>>;

// ACL's create calls return null on refusal; the reason is ACL's recent message.
template <class T>
acl_owner<T> made(device& dev, T* p, const char* function) {
  if (p == nullptr) {
    throw_error(keel::errc::invalid_parameter, function,
                "ACL refused the description; runtime says: " + recent_message(dev.functions().aclGetRecentErrMsg));
  }
  return acl_owner<T>(p, acl_deleter<T>{&dev});
}
}  // namespace detail
/// @endcond

/**
 * @brief An aclTensor describing a keel tensor view (ND format; the storage
 * is the view's own extent). Owns the aclTensor, not the memory.
 * Move-only; thread-compatible; throws keel::error when ACL refuses.
 */
class tensor {
 public:
  /// An aclTensor describing @p view on @p dev. @throws keel::error when ACL refuses.
  tensor(device& dev, const keel::ops::tensor& view) {
    std::vector<std::int64_t> shape(view.dim()), strides(view.dim());
    std::int64_t extent = view.storage_offset() + 1;
    for (std::size_t i = 0; i < view.dim(); ++i) {
      shape[i] = view.size(i);
      strides[i] = view.stride(i);
      extent += (shape[i] > 0 ? shape[i] - 1 : 0) * strides[i];
    }
    handle_ = detail::made(dev,
                           dev.functions().aclCreateTensor(shape.data(), shape.size(), data_type_of(view.type()),
                                                           strides.data(), view.storage_offset(), format::nd, &extent, 1,
                                                           view.data()),
                           "aclCreateTensor");
  }
  /// The ACL object owned.
  ::aclTensor* get() const noexcept { return handle_.get(); }

 private:
  detail::acl_owner<::aclTensor> handle_;
};

/** @brief An aclScalar holding a keel scalar's value (float32 or int64). Move-only owner. */
class scalar {
 public:
  /// An aclScalar of @p value on @p dev. @throws keel::error when ACL refuses.
  scalar(device& dev, const keel::ops::scalar& value) {
    if (value.is_floating()) {
      float f = value.to_float();
      handle_ = detail::made(dev, dev.functions().aclCreateScalar(&f, data_type::float32), "aclCreateScalar");
    } else {
      std::int64_t i = value.to_integer<std::int64_t>();
      handle_ = detail::made(dev, dev.functions().aclCreateScalar(&i, data_type::int64), "aclCreateScalar");
    }
  }
  /// The ACL object owned.
  ::aclScalar* get() const noexcept { return handle_.get(); }

 private:
  detail::acl_owner<::aclScalar> handle_;
};

/** @brief An aclIntArray. Move-only owner. */
class int_array {
 public:
  /// An aclIntArray of @p values on @p dev. @throws keel::error when ACL refuses.
  int_array(device& dev, const std::vector<std::int64_t>& values)
      : handle_(detail::made(dev, dev.functions().aclCreateIntArray(values.data(), values.size()), "aclCreateIntArray")) {}
  /// The ACL object owned.
  ::aclIntArray* get() const noexcept { return handle_.get(); }

 private:
  detail::acl_owner<::aclIntArray> handle_;
};

/// @cond
namespace detail {
using phase_two = nn_status (*)(const api&, void*, std::uint64_t, executor_handle, stream_handle);
using aclnn_function = nn_status (*)(void*, std::uint64_t, executor_handle, stream_handle);

// What aclnn's phase one builds: the aclOpExecutor, its workspace size, the
// operator's phase two, and the ACL objects it was made from.
struct aclnn_plan {
  device* dev = nullptr;
  keel::ops::op_kind op = keel::ops::op_kind::add;
  executor_handle handle = nullptr;
  std::uint64_t workspace = 0;
  phase_two run = nullptr;           // through the function table (throws not_supported when it lacks the call)
  aclnn_function address = nullptr;  // the same call resolved at phase one (null: the table lacks it)
  const char* name = "";
  kernel_kind kind{std::string_view{}};     // kernel_kind{name}, made once
  std::vector<std::shared_ptr<void>> keep;  // the aclTensor/aclScalar/aclIntArray objects the executor was made from
  keel::ops::detail::call_record call;      // the call phase one made it for: dumps, operator tasks
  aclnn_plan() = default;
  aclnn_plan(const aclnn_plan&) = delete;
  aclnn_plan& operator=(const aclnn_plan&) = delete;
  ~aclnn_plan() {
    if (handle != nullptr) dev->functions().aclDestroyAclOpExecutor.get()(handle);
  }
};

// The aclnn calls of each operator, from the operator table: phase one
// (aclnn<Aclnn>GetWorkspaceSize) and phase two (aclnn<Aclnn>).
template <keel::ops::op_kind>
struct aclnn_binding;
#define KEEL_ACL_DETAIL_BINDING(op, Aclnn)                                                            \
  template <>                                                                                        \
  struct aclnn_binding<keel::ops::op_kind::op> {                                                     \
    static constexpr const char* function = "aclnn" #Aclnn;                                          \
    static constexpr const char* phase_one = "aclnn" #Aclnn "GetWorkspaceSize";                      \
    template <class... A>                                                                            \
    static nn_status get_workspace_size(const api& f, A... a) {                                      \
      return f.aclnn##Aclnn##GetWorkspaceSize(a...);                                                 \
    }                                                                                                \
    static nn_status run(const api& f, void* w, std::uint64_t n, executor_handle e, stream_handle s) { \
      return f.aclnn##Aclnn(w, n, e, s);                                                             \
    }                                                                                                \
    static aclnn_function address(const api& f) noexcept { return f.aclnn##Aclnn.get(); }           \
  };
KEEL_OPS_OPERATORS(KEEL_ACL_DETAIL_BINDING)
#undef KEEL_ACL_DETAIL_BINDING

template <class T>
std::shared_ptr<void> share(T&& object) {
  return std::make_shared<std::decay_t<T>>(std::forward<T>(object));
}

// A keel argument as aclnn takes it, kept alive by the plan.
inline ::aclTensor* native(device& dev, std::vector<std::shared_ptr<void>>& keep, const keel::ops::tensor& t) {
  auto owned = std::make_shared<acl::tensor>(dev, t);
  keep.push_back(owned);
  return owned->get();
}
inline ::aclScalar* native(device& dev, std::vector<std::shared_ptr<void>>& keep, const keel::ops::scalar& v) {
  auto owned = std::make_shared<acl::scalar>(dev, v);
  keep.push_back(owned);
  return owned->get();
}

// Phase one of operator K with keel's arguments: aclnn takes them in keel's
// order, converted (the default), or with what aclnn adds (the
// specialisations: cast's dtype, pooling's output-size array, baddbmm's
// cubeMathType).
template <keel::ops::op_kind K>
struct aclnn_phase_one {
  template <class... A>
  static nn_status call(device& dev, std::vector<std::shared_ptr<void>>& keep, std::uint64_t* ws,
                        ::aclOpExecutor** ex, const A&... a) {
    // Made in argument order (a braced list is evaluated left to right), so
    // the first refused description is the one reported, as written.
    const std::tuple<decltype(native(dev, keep, a))...> natives{native(dev, keep, a)...};
    return std::apply(
        [&](auto... n) { return aclnn_binding<K>::get_workspace_size(dev.functions(), n..., ws, ex); }, natives);
  }
};
template <>
struct aclnn_phase_one<keel::ops::op_kind::cast> {
  static nn_status call(device& dev, std::vector<std::shared_ptr<void>>& keep, std::uint64_t* ws,
                        ::aclOpExecutor** ex, const keel::ops::tensor& self, const keel::ops::tensor& out) {
    ::aclTensor* in = native(dev, keep, self);
    ::aclTensor* o = native(dev, keep, out);
    return dev.functions().aclnnCastGetWorkspaceSize(in, data_type_of(out.type()), o, ws, ex);
  }
};
template <>
struct aclnn_phase_one<keel::ops::op_kind::adaptive_avg_pool2d> {
  static nn_status call(device& dev, std::vector<std::shared_ptr<void>>& keep, std::uint64_t* ws,
                        ::aclOpExecutor** ex, const keel::ops::tensor& self, std::int64_t out_h, std::int64_t out_w,
                        const keel::ops::tensor& out) {
    ::aclTensor* in = native(dev, keep, self);
    auto size = std::make_shared<int_array>(dev, std::vector<std::int64_t>{out_h, out_w});
    keep.push_back(size);
    ::aclTensor* o = native(dev, keep, out);
    return dev.functions().aclnnAdaptiveAvgPool2dGetWorkspaceSize(in, size->get(), o, ws, ex);
  }
};
template <>
struct aclnn_phase_one<keel::ops::op_kind::baddbmm> {
  static nn_status call(device& dev, std::vector<std::shared_ptr<void>>& keep, std::uint64_t* ws,
                        ::aclOpExecutor** ex, const keel::ops::tensor& self, const keel::ops::tensor& b1,
                        const keel::ops::tensor& b2, const keel::ops::scalar& beta, const keel::ops::scalar& alpha,
                        const keel::ops::tensor& out) {
    ::aclTensor* s = native(dev, keep, self);
    ::aclTensor* m1 = native(dev, keep, b1);
    ::aclTensor* m2 = native(dev, keep, b2);
    ::aclScalar* be = native(dev, keep, beta);
    ::aclScalar* al = native(dev, keep, alpha);
    ::aclTensor* o = native(dev, keep, out);
    return dev.functions().aclnnBaddbmmGetWorkspaceSize(s, m1, m2, be, al, o, 0, ws, ex);  // cubeMathType 0: keep the dtype
  }
};

// An ACL executor cache's key words beyond the operator's own: an
// aclOpExecutor is bound to its tensors' addresses and scalar values (the
// ACL subset keel uses has no aclSetTensorAddr), so they identify the call.
inline void add_identity(keel::ops::detail::plan_key& k, const keel::ops::tensor& t) noexcept {
  k.put(static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(t.data())));
  k.put(static_cast<std::uint64_t>(t.storage_offset()));
}
inline void add_identity(keel::ops::detail::plan_key& k, const keel::ops::scalar& v) noexcept {
  std::uint64_t bits = 0;
  if (v.is_floating()) {
    const double d = v.to_double();
    std::memcpy(&bits, &d, sizeof bits);
  } else {
    bits = static_cast<std::uint64_t>(v.to_integer<std::int64_t>());
  }
  k.put(bits);
}
inline void add_identity(keel::ops::detail::plan_key&, std::int64_t) noexcept {}  // already in the operator's key

// The identity words of a call, each argument taken as the operator's key
// takes it (a float alpha as a scalar, not as an integer).
template <class KeyFunction>
struct call_identity;
template <class R, class... P>
struct call_identity<R (*)(P...)> {
  template <class... A>
  static void add(keel::ops::detail::plan_key& k, const A&... a) {
    (add_identity(k, static_cast<P>(a)), ...);
  }
};

// The plan as a launch argument. ACL's launch_kernel runs the body when it
// is issued (eager or captured), while the caller's executor holds the plan
// and the caller's span the workspace, so the argument borrows both: no
// reference count moves per launch. What keeps the launch past the call (a
// capture, an update's staging: keel/runtime/checked/task_uses.hpp) calls
// keep_for_later(), and the kept copy owns the plan and the workspace's
// owner, which the launch passes to aclnn by address only.
class plan_argument {
 public:
  explicit plan_argument(const std::shared_ptr<const aclnn_plan>& source,
                         const std::shared_ptr<void>* workspace = nullptr) noexcept
      : plan_(source.get()), source_(&source), workspace_source_(workspace) {}
  // An owning argument, as a per-task update passes it (launch_argument below).
  static plan_argument owning(std::shared_ptr<const aclnn_plan> source) noexcept {
    plan_argument a(source);
    a.owner_ = std::move(source);
    a.source_ = nullptr;  // owner_ is set: keep_for_later() never reads it
    return a;
  }
  const aclnn_plan* operator->() const noexcept { return plan_; }
  // The plan, shared: the owner when staged, else the executor's (valid
  // while the launch call runs, when a capture describes the argument).
  std::shared_ptr<const aclnn_plan> shared() const noexcept { return owner_ ? owner_ : *source_; }
  void keep_for_later() {
    if (!owner_) owner_ = *source_;
    if (workspace_source_ != nullptr) workspace_ = *std::exchange(workspace_source_, nullptr);
  }

 private:
  const aclnn_plan* plan_;
  const std::shared_ptr<const aclnn_plan>* source_;  // the executor's, valid while the launch call runs
  const std::shared_ptr<void>* workspace_source_ = nullptr;  // the caller's span's owner, as long as source_
  std::shared_ptr<const aclnn_plan> owner_;  // set when kept
  std::shared_ptr<void> workspace_;          // set when kept
};

// The owner a launch's workspace span shares (null: a bare address).
template <class Span>
using span_owner_member = decltype(std::declval<const Span&>().owner);
template <class Span>
const std::shared_ptr<void>* workspace_owner(const Span& workspace) noexcept {
  if constexpr (keel::detail::is_detected_v<span_owner_member, Span>) {
    return workspace.owner ? &workspace.owner : nullptr;
  } else {
    return nullptr;
  }
}

// ACLNN_ERR_RUNTIME_ERROR (361001) says only that the operator's call into
// the runtime failed. The runtime keeps the thread's last error code
// (aclrtGetLastError, hicann/runtime docs/zh/api_ref/13_exception_handling.md),
// and on 361001 keel reports the runtime's own status: its code names the
// broken rule (107030 is a capture_violation), and the message keeps 361001.
// keel reads (and so clears) it only after a 361001, with no clearing call
// before each launch: the runtime call that failed inside the operator set
// it last (every failing runtime call sets the thread's last error), so an
// older error left by some earlier call cannot be what is read.
struct run_aclnn {
  void operator()(launch_context& ctx, const plan_argument& plan, void* workspace) const {
    const api& f = ctx.functions();
    const nn_status st = plan->address != nullptr
                             ? plan->address(workspace, plan->workspace, plan->handle, ctx.stream())
                             : plan->run(f, workspace, plan->workspace, plan->handle, ctx.stream());
    if (st != 0) fail(f, st, f.aclrtGetLastError.get(), plan->name);  // null on a CANN without it
  }
  [[noreturn]] static void fail(const api& f, nn_status st, status (*last_error)(last_error_level), const char* name) {
    const std::string recent = recent_message(f.aclGetRecentErrMsg);
    const status runtime = st == 361001 && last_error != nullptr ? last_error(last_error_level::thread) : 0;
    if (runtime == 0) throw_status(st, name, recent);
    std::string rule = "status 361001 (ACLNN_ERR_RUNTIME_ERROR) over the runtime's status " + std::to_string(runtime);
    if (const char* n = status_name(runtime)) rule += std::string(" (") + n + ")";
    if (!recent.empty()) rule += "; runtime says: " + recent;
    throw keel::error(make_status_code(runtime), name, std::move(rule));
  }
};
}  // namespace detail
/// @endcond

/// @cond
namespace detail {
// Whether the runtime has an allocator registered on the stream
// (aclrtAllocatorRegister, keel::acl::allocator_registration): the aclnn
// operator then takes its workspace from it.
inline bool has_registered_allocator(stream_ref s) {
  const api& a = s.device().functions();
  if (!a.aclrtAllocatorGetByStream) return false;
  allocator_desc_handle desc = nullptr;
  void* object = nullptr;
  allocator_alloc_func alloc = nullptr;
  allocator_free_func free = nullptr;
  allocator_alloc_advise_func advise = nullptr;
  allocator_get_addr_func address = nullptr;
  return a.aclrtAllocatorGetByStream(s.native_handle(), &desc, &object, &alloc, &free, &advise, &address) == 0;
}
}  // namespace detail
/// @endcond

/**
 * @brief ACL's operator layer: keel's operators through aclnn's two-phase
 * calls (phase one: aclnn<Op>GetWorkspaceSize, made repeatable; phase two:
 * aclnn<Op> on an ACL stream, as one launch with kernel_kind "aclnn<Op>", so
 * capture records it and a task-group update replaces it). The layer that
 * keel::ops::prepare_*, run_on, exec and the executor caches use for an
 * acl::device.
 *
 * Ownership: none (static members); plans own their aclOpExecutor and ACL
 * objects. Thread safety: as ACL's. Exceptions: keel::error with the aclnn
 * status and ACL's message; for ACLNN_ERR_RUNTIME_ERROR (361001) the
 * runtime's own status for the thread (aclrtGetLastError), so code() names
 * the rule a launch broke and rule() still says 361001.
 */
struct aclnn_operators {
  /// What phase one builds.
  using plan_type = detail::aclnn_plan;
  /// What phase one plans against.
  using target_type = device;

  /** @brief Bytes of device workspace @p p needs (aclnn's figure; workers do not apply). Throws: nothing. */
  static keel::ops::detail::checked_size workspace_bytes(const plan_type& p, std::size_t) noexcept {
    return keel::ops::detail::checked_size(static_cast<std::size_t>(p.workspace));
  }
  /** @brief Phase two: aclnn<Op>(workspace, size, executor, stream) as one launch on @p stream. */
  template <class Stream, class Span>
  static void launch(const Stream& stream, const std::shared_ptr<const plan_type>& p, const Span& workspace,
                     std::size_t) {
    stream.launch(p->kind, detail::run_aclnn{}, detail::plan_argument(p, detail::workspace_owner(workspace)),
                  workspace.data);
  }
  /** @brief Phase one of @p Op on @p dev. @throws keel::error with the aclnn status and ACL's message. */
  template <class Op, class... Args>
  static keel::ops::basic_executor<aclnn_operators> prepare(device& dev, const keel::ops::prepare_options& options,
                                                           const Args&... args) {
    using binding = detail::aclnn_binding<Op::kind>;
    auto plan = std::make_shared<detail::aclnn_plan>();
    plan->dev = &dev;
    plan->op = Op::kind;
    plan->run = &binding::run;
    plan->address = binding::address(dev.functions());
    plan->name = binding::function;
    plan->kind = kernel_kind{binding::function};
    const nn_status st =
        detail::aclnn_phase_one<Op::kind>::call(dev, plan->keep, &plan->workspace, &plan->handle, args...);
    if (st != 0) detail::throw_status(st, binding::phase_one, detail::recent_message(dev.functions().aclGetRecentErrMsg));
    dev.check(dev.functions().aclSetAclOpExecutorRepeatable(plan->handle), "aclSetAclOpExecutorRepeatable");
    keel::ops::detail::record_call(plan->call, Op::kind, args...);
    return keel::ops::basic_executor<aclnn_operators>(std::move(plan), options);
  }
  /** @brief An executor cache's key of a call of @p Op: the operator's key, then every address and scalar value. */
  template <class Op, class... Args>
  static keel::ops::detail::plan_key key(const Args&... args) noexcept {
    keel::ops::detail::plan_key k = Op::key(args...);
    detail::call_identity<decltype(&Op::key)>::add(k, args...);
    return k;
  }
  /** @brief A hit's executor: the cached plan itself (its key fixed every address and value). Throws: nothing. */
  template <class Op, class... Args>
  static std::shared_ptr<const plan_type> bind(const std::shared_ptr<const plan_type>& cached, const Args&...) noexcept {
    return cached;
  }
  /** @brief exec() acquires an executor and runs it (aclnn has nothing to bind at launch). */
  template <class Op>
  static constexpr bool binds_at_launch() noexcept {
    return false;
  }
};

/// ACL's executor (keel 0.1's name; keel::ops::basic_executor<aclnn_operators>).
using executor = keel::ops::basic_executor<aclnn_operators>;

} KEEL_END_NAMESPACE  // namespace keel::acl

/// An acl::device plans ACL's aclnn operators.
template <>
struct keel::ops::operator_layer_for<keel::acl::device> {
  /// The layer.
  using type = keel::acl::aclnn_operators;
};

KEEL_BEGIN_NAMESPACE namespace acl {

/**
 * @name keel 0.1's ACL phase one
 * keel::ops::prepare_<op>(dev, ...) under the 0.1 names: the same executor,
 * repeatable, sized by aclnn. @throws keel::error with the aclnn status.
 * @{
 */
/** @brief Phase one of out = self + alpha * other (aclnnAdd). */
inline executor prepare_add(device& dev, const keel::ops::tensor& self, const keel::ops::tensor& other,
                            const keel::ops::scalar& alpha, const keel::ops::tensor& out) {
  return keel::ops::prepare_add(dev, self, other, alpha, out);
}
/** @brief Phase one of out = self * other (aclnnMul). */
inline executor prepare_mul(device& dev, const keel::ops::tensor& self, const keel::ops::tensor& other,
                            const keel::ops::tensor& out) {
  return keel::ops::prepare_mul(dev, self, other, out);
}
/** @brief Phase one of out = self + value * tensor1 * tensor2 (aclnnAddcmul). */
inline executor prepare_addcmul(device& dev, const keel::ops::tensor& self, const keel::ops::tensor& tensor1,
                                const keel::ops::tensor& tensor2, const keel::ops::scalar& value,
                                const keel::ops::tensor& out) {
  return keel::ops::prepare_addcmul(dev, self, tensor1, tensor2, value, out);
}
/** @brief Phase one of out = self cast to out's dtype (aclnnCast). */
inline executor prepare_cast(device& dev, const keel::ops::tensor& self, const keel::ops::tensor& out) {
  return keel::ops::prepare_cast(dev, self, out);
}
/** @brief Phase one of out = adaptive_avg_pool2d(self, (out_h, out_w)) (aclnnAdaptiveAvgPool2d). */
inline executor prepare_adaptive_avg_pool2d(device& dev, const keel::ops::tensor& self, std::int64_t out_h,
                                            std::int64_t out_w, const keel::ops::tensor& out) {
  return keel::ops::prepare_adaptive_avg_pool2d(dev, self, out_h, out_w, out);
}
/** @brief Phase one of out = beta * self + alpha * (batch1 @ batch2) (aclnnBaddbmm, cubeMathType 0: keep dtype). */
inline executor prepare_baddbmm(device& dev, const keel::ops::tensor& self, const keel::ops::tensor& batch1,
                                const keel::ops::tensor& batch2, const keel::ops::scalar& beta,
                                const keel::ops::scalar& alpha, const keel::ops::tensor& out) {
  return keel::ops::prepare_baddbmm(dev, self, batch1, batch2, beta, alpha, out);
}
/** @} */

/**
 * @brief Phase two under keel 0.1's name: aclnnXxx(workspace, size,
 * executor, stream) as one launch on @p stream (kernel_kind "aclnn<Op>"),
 * on a const executor and without counting the run (keel::ops::run_on(stream,
 * ex, workspace) is the generic form, which counts runs and checks the
 * workspace's size). @p workspace must hold workspace_size() bytes of device
 * memory and outlive the work (and any model that captured it).
 * @throws keel::error null_parameter for an empty executor or a missing
 * workspace; as aclnn_operators for the launch. With a pool registered as
 * the stream's allocator (keel::acl::allocator_registration), @p workspace
 * may be null: the operator takes its workspace from the pool.
 */
inline void run_on(stream_ref stream, const executor& ex, void* workspace = nullptr) {
  if (!ex) throw_error(keel::errc::null_parameter, "keel::acl::run_on", "the executor is empty");
  if (ex.workspace_size() != 0 && workspace == nullptr && !detail::has_registered_allocator(stream))
    throw_error(keel::errc::null_parameter, "keel::acl::run_on",
                "the executor needs a workspace of " + std::to_string(ex.workspace_size()) + " bytes");
  struct pointer_only {
    void* data;
  };
  aclnn_operators::launch(stream, ex.plan(), pointer_only{workspace}, 0);
}

}  // namespace acl

/**
 * @brief An aclnn launch's plan argument (run_on's on ACL), in descriptions
 * and refusals: named as the layer's plan, and described as the operator
 * call it was prepared for (a dump's operator, tensors and scalars).
 */
template <>
struct argument_traits<acl::detail::plan_argument> {
  /// The type's name in descriptions and refusals.
  static constexpr std::string_view name = "keel::acl::aclnn_operators plan argument";
  /** @brief What the description keeps: the plan. Throws: nothing. */
  static std::shared_ptr<const void> operator_object(const acl::detail::plan_argument& a) noexcept {
    return a.shared();
  }
  /** @brief The call the plan behind @p object runs. @throws std::bad_alloc. */
  static void describe_operator(const void* object, operator_call& out) {
    const auto& p = *static_cast<const acl::detail::aclnn_plan*>(object);
    ops::detail::describe_call(p.call, p.name, out);
  }
};

/// @cond
// An operator task's plan, given to task_update_scope::set_arguments as the
// executor's shared plan (ex.plan()), is stored as run_on's launch stores it.
template <>
struct launch_argument<std::shared_ptr<const acl::detail::aclnn_plan>> {
  using type = acl::detail::plan_argument;
  static type store(std::shared_ptr<const acl::detail::aclnn_plan> plan) noexcept {
    return type::owning(std::move(plan));
  }
};
/// @endcond

KEEL_END_NAMESPACE  // namespace keel
