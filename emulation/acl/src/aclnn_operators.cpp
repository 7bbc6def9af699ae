// SPDX-License-Identifier: Apache-2.0
// The six two-phase aclnn operators (aclnnop/*.h): aclnnXxxGetWorkspaceSize
// checks and prepares keel's reference operator, aclnnXxx enqueues it on a
// stream. This is the library's only translation unit that compiles the
// Highway kernels (for the static target: one compilation, no dispatch table).
#include <cstdint>
#include <memory>

#include "aclnnop/aclnn_adaptive_avg_pool2d.h"
#include "aclnnop/aclnn_add.h"
#include "aclnnop/aclnn_addcmul.h"
#include "aclnnop/aclnn_baddbmm.h"
#include "aclnnop/aclnn_cast.h"
#include "aclnnop/aclnn_mul.h"
#include "detail/aclnn_objects.hpp"
#include "allocator.hpp"
#include "detail/capture_rules.hpp"
#include "detail/overflow.hpp"
#include "detail/state.hpp"
#include "keel/ops/kernels/static_dispatch.hpp"
#include "keel/ops/launch.hpp"
#include "keel/ops/operators.hpp"

namespace keel::acl_emulation::detail {
namespace {

const keel::ops::kernel_table& kernels() { return keel::ops::static_kernels(); }

keel::ops::prepare_options options() {
  return keel::ops::prepare_options{dev().compute_workers(), keel::ops::executor_use::repeatable};
}

// Phase one: checks the pointers CANN requires, prepares, hands out an
// executor, which keeps the view of the result `out` for the overflow check.
template <class Prepare>
aclnnStatus phase_one(const char* api, std::uint64_t* workspaceSize, aclOpExecutor** executor, const aclTensor* out,
                      Prepare&& prepare) {
  return guarded(api, call::nn, [&] {
    require(workspaceSize, api, "workspaceSize");
    require(executor, api, "executor");
    auto made = std::make_unique<aclOpExecutor>();
    made->ex = prepare();  // requires `out`
    made->out = out->view;
    *workspaceSize = made->ex.workspace_size();
    *executor = made.release();
  });
}

// Phase two: enqueues on the stream; a once-only executor is consumed by a
// successful launch (the launched task and any capturing model keep the plan).
aclnnStatus phase_two(const char* api, keel::ops::op_kind op, void* workspace, std::uint64_t workspaceSize,
                      aclOpExecutor* executor, aclrtStream stream) {
  if (!has_context()) return no_context(api);  // it enqueues on a stream: a runtime call
  return guarded(api, call::nn, [&] {
    require(executor, api, "executor");
    if (!executor->ex || executor->ex.op() != op)
      throw_rule(errc::invalid_parameter, api, "the executor was not made by this operator's GetWorkspaceSize");
    // CANN (dev_guide/05): an operator goes to a stream of the current device.
    hb::stream_handle s = current_device_stream(stream, api);
    cann_rules::check_issue(stream, true);
    // No workspace given: the stream's registered allocator's (allocator.cpp).
    keel_emulation::stream_workspace registered;
    if (workspaceSize != 0 && workspace == nullptr && registered.take(stream, workspaceSize))
      workspace = registered.address();
    if (workspaceSize != 0) require(workspace, api, "workspace");
    keel::ops::run_on(keel::host::stream_ref(hb::device_of(s), s), executor->ex,
                      keel::memory_span{workspace, static_cast<std::size_t>(workspaceSize), keel::memory_kind::device,
                                        nullptr});
    cann_rules::note_task(stream);
    check_overflow_after(stream, s, executor->out);
    if (!executor->repeatable) delete executor;
  });
}


}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclnnStatus aclnnAddGetWorkspaceSize(const aclTensor* self, const aclTensor* other, const aclScalar* alpha,
                                     aclTensor* out, std::uint64_t* workspaceSize, aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnAddGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, out, [&] {
    require(self, api, "self");
    require(other, api, "other");
    require(alpha, api, "alpha");
    require(out, api, "out");
    return keel::ops::prepare_add(kernels(), self->view, other->view, alpha->value, out->view, options());
  });
}
aclnnStatus aclnnAdd(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return phase_two("aclnnAdd", keel::ops::op_kind::add, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnMulGetWorkspaceSize(const aclTensor* self, const aclTensor* other, aclTensor* out,
                                     std::uint64_t* workspaceSize, aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnMulGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, out, [&] {
    require(self, api, "self");
    require(other, api, "other");
    require(out, api, "out");
    return keel::ops::prepare_mul(kernels(), self->view, other->view, out->view, options());
  });
}
aclnnStatus aclnnMul(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return phase_two("aclnnMul", keel::ops::op_kind::mul, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnAddcmulGetWorkspaceSize(const aclTensor* self, const aclTensor* tensor1, const aclTensor* tensor2,
                                         const aclScalar* value, aclTensor* out, std::uint64_t* workspaceSize,
                                         aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnAddcmulGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, out, [&] {
    require(self, api, "self");
    require(tensor1, api, "tensor1");
    require(tensor2, api, "tensor2");
    require(value, api, "value");
    require(out, api, "out");
    return keel::ops::prepare_addcmul(kernels(), self->view, tensor1->view, tensor2->view, value->value, out->view,
                                      options());
  });
}
aclnnStatus aclnnAddcmul(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return phase_two("aclnnAddcmul", keel::ops::op_kind::addcmul, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnCastGetWorkspaceSize(const aclTensor* self, aclDataType dtype, aclTensor* out,
                                      std::uint64_t* workspaceSize, aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnCastGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, out, [&] {
    require(self, api, "self");
    require(out, api, "out");
    if (out->type != dtype)
      throw_rule(errc::invalid_parameter, api, "dtype must be out's data type");
    return keel::ops::prepare_cast(kernels(), self->view, out->view, options());
  });
}
aclnnStatus aclnnCast(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return phase_two("aclnnCast", keel::ops::op_kind::cast, workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnAdaptiveAvgPool2dGetWorkspaceSize(const aclTensor* self, const aclIntArray* outputSize, aclTensor* out,
                                                   std::uint64_t* workspaceSize, aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnAdaptiveAvgPool2dGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, out, [&] {
    require(self, api, "self");
    require(outputSize, api, "outputSize");
    require(out, api, "out");
    if (outputSize->values.size() != 2)
      throw_rule(errc::invalid_parameter, api, "outputSize must hold two values (H, W)");
    return keel::ops::prepare_adaptive_avg_pool2d(kernels(), self->view, outputSize->values[0],
                                                  outputSize->values[1], out->view, options());
  });
}
aclnnStatus aclnnAdaptiveAvgPool2d(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor,
                                   aclrtStream stream) {
  return phase_two("aclnnAdaptiveAvgPool2d", keel::ops::op_kind::adaptive_avg_pool2d, workspace, workspaceSize,
                   executor, stream);
}

// cubeMathType (0 KEEP_DTYPE, 1 ALLOW_FP32_DOWN_PRECISION, 2 USE_FP16, 3
// USE_HF32, aclnnBaddbmm page) picks Cube precision; the CPU computes in
// float32 whatever it says.
aclnnStatus aclnnBaddbmmGetWorkspaceSize(const aclTensor* self, const aclTensor* batch1, const aclTensor* batch2,
                                         const aclScalar* beta, const aclScalar* alpha, aclTensor* out,
                                         int8_t cubeMathType, std::uint64_t* workspaceSize, aclOpExecutor** executor) {
  static constexpr const char* api = "aclnnBaddbmmGetWorkspaceSize";
  return phase_one(api, workspaceSize, executor, out, [&] {
    require(self, api, "self");
    require(batch1, api, "batch1");
    require(batch2, api, "batch2");
    require(beta, api, "beta");
    require(alpha, api, "alpha");
    require(out, api, "out");
    if (cubeMathType < 0 || cubeMathType > 3)
      throw_rule(errc::invalid_parameter, api, "cubeMathType must be 0..3");
    return keel::ops::prepare_baddbmm(kernels(), self->view, batch1->view, batch2->view, beta->value, alpha->value,
                                      out->view, options());
  });
}
aclnnStatus aclnnBaddbmm(void* workspace, std::uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return phase_two("aclnnBaddbmm", keel::ops::op_kind::baddbmm, workspace, workspaceSize, executor, stream);
}

}  // extern "C"
