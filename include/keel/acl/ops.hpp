// SPDX-License-Identifier: Apache-2.0
// The five reference operators through ACL's two-phase aclnn calls: owning
// handles for aclTensor / aclScalar / aclIntArray / aclOpExecutor, phase one
// (prepare_xxx: aclnnXxxGetWorkspaceSize) and phase two (run_on: aclnnXxx on
// an ACL stream, as one launch, so capture and task-group update see it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "keel/acl/backend.hpp"
#include "keel/ops/dtype.hpp"
#include "keel/ops/scalar.hpp"
#include "keel/ops/tensor.hpp"

namespace keel::acl {

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
struct executor_state {
  device* dev = nullptr;
  executor_handle handle = nullptr;
  std::uint64_t workspace = 0;
  phase_two run = nullptr;
  const char* name = "";
  std::vector<std::shared_ptr<void>> keep;  // the aclTensor/aclScalar objects the executor was made from
  ~executor_state() {
    if (handle != nullptr) dev->functions().aclDestroyAclOpExecutor.get()(handle);
  }
};
}  // namespace detail
/// @endcond

/**
 * @brief A repeatable aclOpExecutor from phase one, its workspace size, and
 * its phase two. Shared ownership (a capture keeps it for as long as the
 * launch that used it); destroyed with aclDestroyAclOpExecutor.
 * Thread safety: run it from one thread at a time, as ACL requires.
 */
class executor {
 public:
  executor() noexcept = default;
  /// An executor sharing @p state.
  explicit executor(std::shared_ptr<detail::executor_state> state) noexcept : state_(std::move(state)) {}
  /// Bytes of device workspace phase two needs (0: none).
  std::uint64_t workspace_size() const noexcept { return state_ ? state_->workspace : 0; }
  /// Whether this holds an executor.
  explicit operator bool() const noexcept { return state_ != nullptr; }
  /// The shared executor state (the aclOpExecutor and what it keeps alive).
  const std::shared_ptr<detail::executor_state>& state() const noexcept { return state_; }

 private:
  std::shared_ptr<detail::executor_state> state_;
};

/// @cond
namespace detail {
template <class T>
std::shared_ptr<void> share(T&& object) {
  return std::make_shared<std::decay_t<T>>(std::forward<T>(object));
}

template <class GetWorkspaceSize>
executor prepare(device& dev, const char* name, phase_two run, std::vector<std::shared_ptr<void>> keep,
                 GetWorkspaceSize&& get) {
  auto state = std::make_shared<executor_state>();
  state->dev = &dev;
  state->run = run;
  state->name = name;
  state->keep = std::move(keep);
  std::string phase_one = std::string(name) + "GetWorkspaceSize";
  const nn_status st = get(&state->workspace, &state->handle);
  if (st != 0) detail::throw_status(st, phase_one.c_str(), recent_message(dev.functions().aclGetRecentErrMsg));
  dev.check(dev.functions().aclSetAclOpExecutorRepeatable(state->handle), "aclSetAclOpExecutorRepeatable");
  return executor(std::move(state));
}

template <class T>
T& kept(const std::vector<std::shared_ptr<void>>& keep, std::size_t i) {
  return *static_cast<T*>(keep[i].get());
}
}  // namespace detail
/// @endcond

/** @brief Phase one of out = self + alpha * other (aclnnAdd). @throws keel::error with the aclnn status. */
inline executor prepare_add(device& dev, const keel::ops::tensor& self, const keel::ops::tensor& other,
                            const keel::ops::scalar& alpha, const keel::ops::tensor& out) {
  std::vector<std::shared_ptr<void>> keep{detail::share(tensor(dev, self)), detail::share(tensor(dev, other)),
                                          detail::share(scalar(dev, alpha)), detail::share(tensor(dev, out))};
  const api& a = dev.functions();
  return detail::prepare(
      dev, "aclnnAdd",
      [](const api& f, void* w, std::uint64_t n, executor_handle e, stream_handle s) { return f.aclnnAdd(w, n, e, s); },
      keep, [&](std::uint64_t* ws, ::aclOpExecutor** ex) {
        return a.aclnnAddGetWorkspaceSize(detail::kept<tensor>(keep, 0).get(), detail::kept<tensor>(keep, 1).get(),
                                          detail::kept<scalar>(keep, 2).get(), detail::kept<tensor>(keep, 3).get(), ws, ex);
      });
}

/** @brief Phase one of out = self + value * tensor1 * tensor2 (aclnnAddcmul). */
inline executor prepare_addcmul(device& dev, const keel::ops::tensor& self, const keel::ops::tensor& tensor1,
                                const keel::ops::tensor& tensor2, const keel::ops::scalar& value,
                                const keel::ops::tensor& out) {
  std::vector<std::shared_ptr<void>> keep{detail::share(tensor(dev, self)), detail::share(tensor(dev, tensor1)),
                                          detail::share(tensor(dev, tensor2)), detail::share(scalar(dev, value)),
                                          detail::share(tensor(dev, out))};
  const api& a = dev.functions();
  return detail::prepare(
      dev, "aclnnAddcmul",
      [](const api& f, void* w, std::uint64_t n, executor_handle e, stream_handle s) { return f.aclnnAddcmul(w, n, e, s); },
      keep, [&](std::uint64_t* ws, ::aclOpExecutor** ex) {
        return a.aclnnAddcmulGetWorkspaceSize(detail::kept<tensor>(keep, 0).get(), detail::kept<tensor>(keep, 1).get(),
                                              detail::kept<tensor>(keep, 2).get(), detail::kept<scalar>(keep, 3).get(),
                                              detail::kept<tensor>(keep, 4).get(), ws, ex);
      });
}

/** @brief Phase one of out = self cast to out's dtype (aclnnCast). */
inline executor prepare_cast(device& dev, const keel::ops::tensor& self, const keel::ops::tensor& out) {
  std::vector<std::shared_ptr<void>> keep{detail::share(tensor(dev, self)), detail::share(tensor(dev, out))};
  const api& a = dev.functions();
  return detail::prepare(
      dev, "aclnnCast",
      [](const api& f, void* w, std::uint64_t n, executor_handle e, stream_handle s) { return f.aclnnCast(w, n, e, s); },
      keep, [&](std::uint64_t* ws, ::aclOpExecutor** ex) {
        return a.aclnnCastGetWorkspaceSize(detail::kept<tensor>(keep, 0).get(), data_type_of(out.type()),
                                           detail::kept<tensor>(keep, 1).get(), ws, ex);
      });
}

/** @brief Phase one of out = adaptive_avg_pool2d(self, (out_h, out_w)) (aclnnAdaptiveAvgPool2d). */
inline executor prepare_adaptive_avg_pool2d(device& dev, const keel::ops::tensor& self, std::int64_t out_h,
                                            std::int64_t out_w, const keel::ops::tensor& out) {
  std::vector<std::shared_ptr<void>> keep{detail::share(tensor(dev, self)),
                                          detail::share(int_array(dev, std::vector<std::int64_t>{out_h, out_w})), detail::share(tensor(dev, out))};
  const api& a = dev.functions();
  return detail::prepare(
      dev, "aclnnAdaptiveAvgPool2d",
      [](const api& f, void* w, std::uint64_t n, executor_handle e, stream_handle s) {
        return f.aclnnAdaptiveAvgPool2d(w, n, e, s);
      },
      keep, [&](std::uint64_t* ws, ::aclOpExecutor** ex) {
        return a.aclnnAdaptiveAvgPool2dGetWorkspaceSize(detail::kept<tensor>(keep, 0).get(),
                                                        detail::kept<int_array>(keep, 1).get(),
                                                        detail::kept<tensor>(keep, 2).get(), ws, ex);
      });
}

/** @brief Phase one of out = beta * self + alpha * (batch1 @ batch2) (aclnnBaddbmm, cubeMathType 0: keep dtype). */
inline executor prepare_baddbmm(device& dev, const keel::ops::tensor& self, const keel::ops::tensor& batch1,
                                const keel::ops::tensor& batch2, const keel::ops::scalar& beta,
                                const keel::ops::scalar& alpha, const keel::ops::tensor& out) {
  std::vector<std::shared_ptr<void>> keep{detail::share(tensor(dev, self)),   detail::share(tensor(dev, batch1)),
                                          detail::share(tensor(dev, batch2)), detail::share(scalar(dev, beta)),
                                          detail::share(scalar(dev, alpha)),  detail::share(tensor(dev, out))};
  const api& a = dev.functions();
  return detail::prepare(
      dev, "aclnnBaddbmm",
      [](const api& f, void* w, std::uint64_t n, executor_handle e, stream_handle s) { return f.aclnnBaddbmm(w, n, e, s); },
      keep, [&](std::uint64_t* ws, ::aclOpExecutor** ex) {
        return a.aclnnBaddbmmGetWorkspaceSize(detail::kept<tensor>(keep, 0).get(), detail::kept<tensor>(keep, 1).get(),
                                              detail::kept<tensor>(keep, 2).get(), detail::kept<scalar>(keep, 3).get(),
                                              detail::kept<scalar>(keep, 4).get(), detail::kept<tensor>(keep, 5).get(),
                                              0, ws, ex);
      });
}

/// @cond
namespace detail {
// ACLNN_ERR_RUNTIME_ERROR (361001) says only that the operator's call into
// the runtime failed. The runtime keeps the thread's last error code
// (aclrtGetLastError, 13_exception_handling.md), so keel clears it before the
// launch and, on 361001, reports the runtime's own status: its code names
// the broken rule (107030 is a capture_violation), and the message keeps 361001.
struct run_executor {
  void operator()(launch_context& ctx, const std::shared_ptr<executor_state>& state, void* workspace) const {
    const api& f = ctx.functions();
    const auto last_error = f.aclrtGetLastError.get();  // null on a CANN without it
    if (last_error != nullptr) last_error(last_error_level::thread);
    const nn_status st = state->run(f, workspace, state->workspace, state->handle, ctx.stream());
    if (st == 0) return;
    const std::string recent = recent_message(f.aclGetRecentErrMsg);
    const status runtime = st == 361001 && last_error != nullptr ? last_error(last_error_level::thread) : 0;
    if (runtime == 0) throw_status(st, state->name, recent);
    std::string rule = "status 361001 (ACLNN_ERR_RUNTIME_ERROR) over the runtime's status " + std::to_string(runtime);
    if (const char* name = status_name(runtime)) rule += std::string(" (") + name + ")";
    if (!recent.empty()) rule += "; runtime says: " + recent;
    throw keel::error(make_status_code(runtime), state->name, std::move(rule));
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
  return a.aclrtAllocatorGetByStream(s.native_handle()->native, &desc, &object, &alloc, &free, &advise, &address) == 0;
}
}  // namespace detail
/// @endcond

/**
 * @brief Phase two: aclnnXxx(workspace, size, executor, stream) as one launch
 * on @p stream (kernel_kind "aclnn.<op>"), so a capture records it and a
 * task-group update replaces it. @p workspace must hold workspace_size() bytes
 * of device memory and outlive the work (and any model that captured it).
 * @throws keel::error with the aclnn status and ACL's message; for
 * ACLNN_ERR_RUNTIME_ERROR (361001), with the runtime's own status for the
 * thread (aclrtGetLastError) when the runtime has one, so code() names the
 * rule the launch broke and rule() still says 361001. With a pool
 * registered as the stream's allocator (keel::acl::allocator_registration),
 * @p workspace may be null: the operator takes its workspace from the pool.
 */
inline void run_on(stream_ref stream, const executor& ex, void* workspace = nullptr) {
  if (!ex) throw_error(keel::errc::null_parameter, "keel::acl::run_on", "the executor is empty");
  if (ex.workspace_size() != 0 && workspace == nullptr && !detail::has_registered_allocator(stream))
    throw_error(keel::errc::null_parameter, "keel::acl::run_on",
                "the executor needs a workspace of " + std::to_string(ex.workspace_size()) + " bytes");
  stream.launch(kernel_kind{ex.state()->name}, detail::run_executor{}, ex.state(), workspace);
}

}  // namespace keel::acl
