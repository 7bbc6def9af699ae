// SPDX-License-Identifier: Apache-2.0
// Memory pools and the graph runner's step on the host backend.
//
// A pool hit (allocate and stream-ordered release of a size the pool holds,
// on one stream) against the backend's own allocate + free (a device buffer
// made and released in stream order), from 4 KiB to 64 MiB, and against an
// empty loop for the hit's absolute cost. The graph runner's step (a fenced
// update of one operator's arguments and a replay of a 200-task model)
// against issuing the same 200 kernels eagerly.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <memory>

#include "harness.hpp"
#include "keel/host/host.hpp"
#include "keel/host/memory_pool.hpp"

namespace {

void pool_sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t size : {std::int64_t{4} << 10, std::int64_t{64} << 10, std::int64_t{1} << 20,
                            std::int64_t{16} << 20, std::int64_t{64} << 20})
    b->Arg(size);
}

void BM_pool_hit(benchmark::State& state) {
  keel::host::device& dev = keel::host::default_device();
  keel::host::stream s{dev};
  keel::host::memory_pool pool{dev, {"bench"}};
  const auto bytes = static_cast<std::size_t>(state.range(0));
  { auto warm = pool.allocate(s, bytes); }
  for (auto _ : state) {
    auto a = pool.allocate(s, bytes);
    benchmark::DoNotOptimize(a.data());
  }
  s.synchronize();
  state.counters["hits"] = static_cast<double>(pool.statistics().hits);
}
BENCHMARK(BM_pool_hit)->Apply(pool_sizes)->UseRealTime();

void BM_device_allocate_free_baseline(benchmark::State& state) {
  keel::host::device& dev = keel::host::default_device();
  keel::host::stream s{dev};
  const auto bytes = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    keel::host::device_buffer b{s, bytes};
    benchmark::DoNotOptimize(b.data());
  }
  s.synchronize();
}
BENCHMARK(BM_device_allocate_free_baseline)->Apply(pool_sizes)->UseRealTime();

void BM_empty_loop_baseline(benchmark::State& state) {
  int x = 0;
  for (auto _ : state) benchmark::DoNotOptimize(++x);
}
BENCHMARK(BM_empty_loop_baseline)->UseRealTime();

constexpr keel::kernel_kind scale_kind{"scale"};
constexpr keel::kernel_kind step_kind{"step"};
constexpr int model_tasks = 200;
void scale_kernel(keel::host::launch_context&, float* x, float alpha) { *x = alpha; }
void step_kernel(keel::host::launch_context&, float* x) { *x += 1.0f; }

// Update + replay of a 200-task model: the first task is the updated group.
void BM_graph_runner_step(benchmark::State& state) {
  keel::host::device& dev = keel::host::default_device();
  keel::host::stream main_stream{dev}, update_stream{dev};
  keel::host::memory_pool pool{dev, {"graph"}};
  keel::host::concurrent_update fenced{dev};
  keel::host::model model;
  keel::host::task_group group;
  float* x = nullptr;
  {
    keel::host::capture_scope capture{main_stream, pool};
    auto scratch = pool.allocate(main_stream, sizeof(float));
    x = scratch.data_as<float>();
    fenced.fence(main_stream);
    {
      keel::host::task_group_scope mark{main_stream};
      main_stream.launch(scale_kind, &scale_kernel, x, 1.0f);
      group = mark.end();
    }
    for (int i = 1; i < model_tasks; ++i) main_stream.launch(step_kind, &step_kernel, x);
    model = capture.end();
  }
  float alpha = 0.0f;
  for (auto _ : state) {
    model.execute(main_stream);
    alpha += 1.0f;
    fenced.update(update_stream, group,
                  [&](keel::host::stream_ref u) { u.launch(scale_kind, &scale_kernel, x, alpha); });
    main_stream.synchronize();
    update_stream.synchronize();
  }
  state.counters["x"] = static_cast<double>(*x);
}
BENCHMARK(BM_graph_runner_step)->UseRealTime();

void BM_graph_runner_eager_baseline(benchmark::State& state) {
  keel::host::device& dev = keel::host::default_device();
  keel::host::stream main_stream{dev};
  auto x = std::make_unique<float>(0.0f);
  float alpha = 0.0f;
  for (auto _ : state) {
    alpha += 1.0f;
    main_stream.launch(scale_kind, &scale_kernel, x.get(), alpha);
    for (int i = 1; i < model_tasks; ++i) main_stream.launch(step_kind, &step_kernel, x.get());
    main_stream.synchronize();
  }
  state.counters["x"] = static_cast<double>(*x);
}
BENCHMARK(BM_graph_runner_eager_baseline)->UseRealTime();

}  // namespace

KEEL_BENCH_COMPARE("BM_pool_hit", "BM_device_allocate_free_baseline", ">= 10x faster than allocate + free");
KEEL_BENCH_OVERHEAD("BM_pool_hit", "BM_empty_loop_baseline/real_time", 40, 0);  // at most 40 ns a hit
KEEL_BENCH_COMPARE("BM_graph_runner_step", "BM_graph_runner_eager_baseline", ">= 10 (a step is at most 1/10 of eager)");
