// SPDX-License-Identifier: Apache-2.0
// Phase two on a stream: an executor launched as one kernel task, its chunks
// split across the device's compute workers, its workspace kept alive by the
// task (and by any model that captured it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/ops/executor.hpp"
#include "keel/runtime/buffer.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/stream_allocator.hpp"
#include "keel/runtime/types.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace ops {

namespace detail {

// The kernel identity a task group update matches: one per operator
// ("keel.ops.<name>", from the operator table).
inline kernel_kind kind_of(op_kind op) noexcept {
  switch (op) {
#define KEEL_OPS_DETAIL_KERNEL_KIND(name, aclnn) \
  case op_kind::name: return kernel_kind{"keel.ops." #name};
    KEEL_OPS_OPERATORS(KEEL_OPS_DETAIL_KERNEL_KIND)
#undef KEEL_OPS_DETAIL_KERNEL_KIND
  }
  return kernel_kind{"keel.ops"};
}

// Runs a plan's stages with `run_chunk(stage, chunk, shared, scratch)`.
// Worker w of the executor's `workers` runs chunks w, w+W, w+2W... with
// scratch slice w, so scratch slices are never shared even when the device
// has more compute workers than the executor was sized for. Plan is the
// plan's static type where the caller knows it (the calls then bind directly).
template <class Context, class Plan, class RunChunk>
void run_stages(Context& ctx, const Plan& p, void* workspace, std::size_t workers, const RunChunk& run_chunk) {
  // The executor's workspace layout: aligned base, shared part, then one
  // scratch slice per worker.
  char* base = static_cast<char*>(workspace);
  if (base != nullptr) {
    const auto v = reinterpret_cast<std::uintptr_t>(base);
    base += round_up(v, workspace_alignment) - v;
  }
  const std::size_t slice = round_up(p.scratch_bytes, workspace_alignment);
  char* scratch0 = base == nullptr ? nullptr : base + round_up(p.shared_bytes, workspace_alignment);
  const std::size_t stages = p.stage_count();
  if (stages == 1 && p.chunk_count(0) == 1) {  // tiny work: one direct call, no pool
    run_chunk(std::size_t{0}, std::size_t{0}, base, scratch0);
    return;
  }
  for (std::size_t s = 0; s < stages; ++s) {
    const std::size_t count = p.chunk_count(s);
    if (count == 0) continue;
    const std::size_t lanes =
        count == 1 ? 1 : std::min<std::size_t>({workers, count, static_cast<std::size_t>(ctx.workers())});
    if (lanes <= 1) {
      for (std::size_t c = 0; c < count; ++c) run_chunk(s, c, base, scratch0);
      continue;
    }
    ctx.parallel_for(lanes, 1, [&](std::size_t begin, std::size_t end) {
      for (std::size_t w = begin; w < end; ++w) {
        char* scratch = scratch0 == nullptr ? nullptr : scratch0 + w * slice;
        for (std::size_t c = w; c < count; c += lanes) run_chunk(s, c, base, scratch);
      }
    });
  }
}

// The task body of an executor's launch.
struct run_task {
  template <class Context>
  void operator()(Context& ctx, const std::shared_ptr<const plan>& p, const memory_span& workspace,
                  std::size_t workers) const {
    run(ctx, p, workspace.data, workers);
  }

  template <class Context>
  static void run(Context& ctx, const std::shared_ptr<const plan>& p, void* workspace, std::size_t workers) {
    const plan& pl = *p;
    run_stages(ctx, pl, workspace, workers,
               [&pl](std::size_t s, std::size_t c, char* shared, char* scratch) { pl.run_chunk(s, c, shared, scratch); });
  }
};

// The task body of an executor without workspace. Its arguments (plan and
// worker count, 24 bytes) fit in a host stream's ring slot, so a tiny launch
// is one enqueue with no allocation; a memory_span (40 bytes, its owner
// included) would not fit and would be boxed on the heap per launch.
struct run_task_no_workspace {
  template <class Context>
  void operator()(Context& ctx, const std::shared_ptr<const plan>& p, std::size_t workers) const {
    run_task::run(ctx, p, nullptr, workers);
  }
};

}  // namespace detail

template <class Stream, class Span>
void host_operators::launch(const Stream& stream, const std::shared_ptr<const plan_type>& p, const Span& workspace,
                            std::size_t workers) {
  const detail::checked_size need = host_operators::workspace_bytes(*p, workers);
  if (need.fits() && need.value() == 0) {  // nothing reads the workspace: nothing to keep alive
    stream.launch(detail::kind_of(p->op), detail::run_task_no_workspace{}, p, workers);
    return;
  }
  stream.launch(detail::kind_of(p->op), detail::run_task{}, p, workspace, workers);
}

/**
 * @brief Phase two on any operator layer: enqueues `ex` on `stream` as one
 * kernel launch (host operators: kernel_kind "keel.ops.<op>", split across
 * the device's compute workers; ACL: "aclnn<Op>", aclnn's phase two).
 * `workspace` must hold ex.workspace_size() bytes; its owner (if any) is
 * kept alive by a host task and by any model that captures it. During
 * capture the launch is recorded and every replay runs it again, so a
 * capture accepts only repeatable executors.
 *
 * @throws keel::error as executor::begin_run, invalid_state for a once-only
 * executor launched into a capture, and what the stream's launch throws.
 */
template <class Stream, class Layer>
void run_on(const Stream& stream, basic_executor<Layer>& ex, const memory_span& workspace) {
  if (ex && ex.use() == executor_use::once && stream.is_capturing()) {
    throw_error(errc::invalid_state, "keel::ops::run_on",
                "a captured launch runs at every replay; prepare the executor with executor_use::repeatable");
  }
  ex.begin_run(workspace.data, workspace.bytes);
  Layer::launch(stream, ex.plan(), workspace, ex.workers());
}

/**
 * @brief Phase two with a workspace allocated on `stream` and released in
 * stream order when this call returns: the memory stays valid until the
 * launched task (and everything issued before the release) has run, and as
 * long as a model that captured the launch, or an update that staged it,
 * runs it. The workspace comes from the pool of the capture `stream` takes
 * part in (a basic_capture_scope given a pool, and the conditional bodies
 * captured in it), else from the pool registered as the stream's allocator
 * (basic_allocator_registration) when it has one, else from the device.
 * @throws keel::error as run_on(stream, ex, workspace), out_of_memory.
 */
template <class Stream, class Layer>
void run_on(const Stream& stream, basic_executor<Layer>& ex) {
  using backend = typename Stream::backend_type;
  const std::size_t bytes = ex ? ex.workspace_size() : 0;
  if (bytes == 0) return run_on(stream, ex, memory_span{});
  if constexpr (is_capture_backend_v<backend>) {
    const basic_stream_ref<backend> s(stream);
    if (const auto pool = keel::detail::capture_memory_routes<backend>::of_stream(keel::detail::handle_of(s))) {
      run_on(stream, ex, pool->allocate_span(keel::detail::handle_of(s), bytes));
      return;  // the capture's pool: the model holds the block
    }
  }
  if constexpr (is_memory_pool_backend_v<backend>) {
    const basic_stream_ref<backend> s(stream);
    if (const basic_memory_pool_ref<backend> pool = registered_pool(s)) {
      const basic_pool_buffer<backend> workspace = pool.allocate(s, bytes);
      run_on(stream, ex, workspace.span());
      return;
    }  // workspace released here, in stream order
  }
  basic_device_buffer<backend> workspace(basic_stream_ref<backend>(stream), bytes);
  run_on(stream, ex, workspace.span());
}  // workspace released here, in stream order

/**
 * @brief run_on(stream, ex, workspace) for an executor made in the call
 * (`run_on(s, prepare_add(...), ws)`): the launch keeps the plan, so the
 * temporary may go when the call returns.
 * @throws keel::error as run_on(stream, ex, workspace).
 */
template <class Stream, class Layer>
void run_on(const Stream& stream, basic_executor<Layer>&& ex, const memory_span& workspace) {
  run_on(stream, ex, workspace);
}

/**
 * @brief run_on(stream, ex) for an executor made in the call
 * (`run_on(s, prepare_add(...))`), its workspace allocated on the stream.
 * @throws keel::error as run_on(stream, ex).
 */
template <class Stream, class Layer>
void run_on(const Stream& stream, basic_executor<Layer>&& ex) {
  run_on(stream, ex);
}

} KEEL_END_NAMESPACE  // namespace keel::ops
