// SPDX-License-Identifier: Apache-2.0
// Per-task and whole-model updates: setting one
// kernel task's arguments and committing costs at most one eager launch
// (BM_stream_eager_launch, runtime_bench.cpp); updating a 1,000-task model
// from another capture costs at most 0.2x capturing and ending it again.
#include <benchmark/benchmark.h>

#include <memory>

#include "harness.hpp"
#include "keel/runtime.hpp"
#include "keel/runtime/model_update.hpp"

namespace {

constexpr int batch = 100;
constexpr int model_tasks = 1000;

void scale_kernel(keel::host::launch_context&, float* x, float alpha) { *x *= alpha; }

keel::host::model capture_model(keel::host::stream& s, float* x, int tasks, float alpha) {
  keel::host::capture_scope capture{s};
  for (int i = 0; i < tasks; ++i) s.launch(keel::kernel_kind{"scale"}, &scale_kernel, x, alpha);
  return capture.end();
}

// One task update per operation: begin, set one kernel's arguments, commit
// on an idle update stream; `batch` of them and one synchronize per
// iteration, as BM_stream_eager_launch.
void BM_task_update_commit(benchmark::State& state) {
  auto& dev = keel::host::default_device();
  keel::host::stream s{dev}, u{dev};
  auto x = std::make_unique<float>(1.0f);
  keel::host::model m = capture_model(s, x.get(), 4, 1.0f);
  const keel::task_info task = m.tasks().at(1);
  float alpha = 1.0f;
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      keel::host::task_update_scope update{m};
      update.set_arguments(task, x.get(), alpha);
      update.end(u);
    }
    u.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(state.iterations() * batch),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_task_update_commit)->UseRealTime();

// The same change through a kernel_task, the handle a runner keeps for a
// task it changes every step (found and type-checked once): one update()
// per operation, `batch` of them and one synchronize per iteration.
void BM_kernel_task_update(benchmark::State& state) {
  auto& dev = keel::host::default_device();
  keel::host::stream s{dev}, u{dev};
  auto x = std::make_unique<float>(1.0f);
  keel::host::model m = capture_model(s, x.get(), 4, 1.0f);
  keel::host::kernel_task<float*, float> task{m, m.tasks().at(1)};
  float alpha = 1.0f;
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) task.update(u, x.get(), alpha);
    u.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(state.iterations() * batch),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_kernel_task_update)->UseRealTime();

// A runner's step: the kernel_task's update, then an execution, both on
// the stream the model runs on (the update waits in that stream's order
// behind the executions before it, so it is committed as a new table).
// Held against the executions alone: a step at most 1.5x an execution.
// The caller issues `batch` steps ahead of the stream, so that many tables
// are alive at once; the model's bins (table_bin, replacement_bin) keep
// them for reuse, so a step allocates nothing.
template <bool Update>
void model_steps(benchmark::State& state) {
  auto& dev = keel::host::default_device();
  keel::host::stream s{dev};
  auto x = std::make_unique<float>(1.0f);
  keel::host::model m = capture_model(s, x.get(), 4, 1.0f);
  keel::host::kernel_task<float*, float> task{m, m.tasks().at(1)};
  float alpha = 1.0f;
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i) {
      if constexpr (Update) task.update(s, x.get(), alpha);
      m.execute(s);
    }
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
void BM_kernel_task_update_executing(benchmark::State& state) { model_steps<true>(state); }
BENCHMARK(BM_kernel_task_update_executing)->UseRealTime();
void BM_model_execute_steps(benchmark::State& state) { model_steps<false>(state); }
BENCHMARK(BM_model_execute_steps)->UseRealTime();

// A whole-model update of a 1,000-task model from another capture of it.
void BM_model_update_1000(benchmark::State& state) {
  auto& dev = keel::host::default_device();
  keel::host::stream s{dev}, u{dev};
  auto x = std::make_unique<float>(1.0f);
  keel::host::model target = capture_model(s, x.get(), model_tasks, 1.0f);
  keel::host::model source = capture_model(s, x.get(), model_tasks, 2.0f);
  for (auto _ : state) keel::update_model(target.ref(), source.ref(), u.ref());
  u.synchronize();
  state.SetItemsProcessed(state.iterations() * model_tasks);
}
BENCHMARK(BM_model_update_1000)->UseRealTime();

// The baseline: capturing the same 1,000 tasks and ending the capture again.
void BM_model_recapture_1000(benchmark::State& state) {
  auto& dev = keel::host::default_device();
  keel::host::stream s{dev};
  auto x = std::make_unique<float>(1.0f);
  for (auto _ : state) {
    keel::host::model m = capture_model(s, x.get(), model_tasks, 2.0f);
    benchmark::DoNotOptimize(m.native_handle());
  }
  state.SetItemsProcessed(state.iterations() * model_tasks);
}
BENCHMARK(BM_model_recapture_1000)->UseRealTime();

}  // namespace

// Per iteration both run `batch` operations and one synchronize: the ratio is per operation.
KEEL_BENCH_COMPARE("BM_kernel_task_update", "BM_stream_eager_launch", ">= 1 (no more than one eager launch)");
KEEL_BENCH_COMPARE("BM_task_update_commit", "BM_stream_eager_launch", "(report: a scope names, checks and stages the task each time)");
KEEL_BENCH_COMPARE("BM_kernel_task_update_executing", "BM_model_execute_steps",
                   ">= 0.67 (an update and an execution per step: at most 1.5x the execution alone)");
KEEL_BENCH_COMPARE("BM_model_update_1000", "BM_model_recapture_1000", ">= 5 (at most 0.2x capturing and ending again)");
