// SPDX-License-Identifier: Apache-2.0
// Introspection: model.tasks() on a 1,000-task model, under
// 20 µs. The baseline copies the same number of task_info records out of a
// vector (what any list of tasks costs to hand out); keel may add at most
// 20 µs to it.
#include <benchmark/benchmark.h>

#include <vector>

#include "harness.hpp"
#include "keel/runtime.hpp"

namespace {

constexpr int model_tasks = 1000;

void nop_kernel(keel::host::launch_context&, float* x, float alpha) { *x += alpha; }

void BM_model_tasks_1000(benchmark::State& state) {
  keel::host::stream s{keel::host::default_device()};
  float x = 0;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    for (int i = 0; i < model_tasks; ++i) s.launch(keel::kernel_kind{"nop"}, &nop_kernel, &x, 1.0f);
    m = capture.end();
  }
  for (auto _ : state) {
    auto tasks = m.tasks();
    benchmark::DoNotOptimize(tasks.data());
  }
  state.SetItemsProcessed(state.iterations() * model_tasks);
}
BENCHMARK(BM_model_tasks_1000)->UseRealTime();

void BM_model_tasks_baseline_1000(benchmark::State& state) {
  const std::vector<keel::task_info> stored(model_tasks);
  for (auto _ : state) {
    std::vector<keel::task_info> copy = stored;
    benchmark::DoNotOptimize(copy.data());
  }
  state.SetItemsProcessed(state.iterations() * model_tasks);
}
BENCHMARK(BM_model_tasks_baseline_1000)->UseRealTime();

}  // namespace

KEEL_BENCH_OVERHEAD("BM_model_tasks_1000", "BM_model_tasks_baseline_1000", 20000.0, 0.0);
