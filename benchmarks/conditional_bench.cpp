// SPDX-License-Identifier: Apache-2.0
// Conditional tasks on the host backend, against plain
// captured models replayed in the same run:
// - a WHILE task whose body holds 1,000 tasks and runs 10 times, against a
//   plain model of 10,000 tasks (target: at most 1.5x its time, so at least
//   0.667 of its throughput);
// - IF tasks with an empty body, against the same number of plain replayed
//   tasks (target: at most 3x, so at least 0.333 of their throughput).
// Each task is a host callable that bumps a counter.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "harness.hpp"
#include "keel/host/host.hpp"

namespace {

using B = keel::host::backend;
constexpr int body_tasks = 1000;
constexpr int loop_runs = 10;
constexpr int if_tasks = 1000;

void report(benchmark::State& state, std::int64_t tasks) {
  state.SetItemsProcessed(state.iterations() * tasks);
  state.counters["ns_per_task"] = benchmark::Counter(static_cast<double>(state.iterations() * tasks),
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_plain_model_10000(benchmark::State& state) {
  keel::host::stream s{keel::host::default_device()};
  std::uint64_t counter = 0;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    for (int i = 0; i < body_tasks * loop_runs; ++i) s.launch_host([&counter] { ++counter; });
    m = capture.end();
  }
  for (auto _ : state) {
    m.execute(s);
    s.synchronize();
  }
  benchmark::DoNotOptimize(counter);
  report(state, body_tasks * loop_runs);
}
BENCHMARK(BM_plain_model_10000)->UseRealTime();

void BM_while_body_1000_x10(benchmark::State& state) {
  keel::host::stream s{keel::host::default_device()}, side{keel::host::default_device()};
  std::uint64_t counter = 0;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    auto runs = keel::make_condition<B>(s, loop_runs);  // 10 at every execution
    std::uint64_t* left = runs.value();
    auto body = keel::while_<B>(s, runs);
    {
      keel::host::body_capture_scope into{side, body};
      for (int i = 0; i < body_tasks - 1; ++i) side.launch_host([&counter] { ++counter; });
      side.launch_host([&counter, left] {
        ++counter;
        --*left;
      });
      into.end();
    }
    m = capture.end();
  }
  for (auto _ : state) {
    m.execute(s);
    s.synchronize();
  }
  if (counter % (body_tasks * loop_runs) != 0) state.SkipWithError("the loop did not run 10 times");
  report(state, body_tasks * loop_runs);
}
BENCHMARK(BM_while_body_1000_x10)->UseRealTime();

void BM_plain_tasks_1000(benchmark::State& state) {
  keel::host::stream s{keel::host::default_device()};
  std::uint64_t counter = 0;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    for (int i = 0; i < if_tasks; ++i) s.launch_host([&counter] { ++counter; });
    m = capture.end();
  }
  for (auto _ : state) {
    m.execute(s);
    s.synchronize();
  }
  benchmark::DoNotOptimize(counter);
  report(state, if_tasks);
}
BENCHMARK(BM_plain_tasks_1000)->UseRealTime();

void BM_if_empty_body_1000(benchmark::State& state) {
  keel::host::stream s{keel::host::default_device()}, side{keel::host::default_device()};
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    auto yes = keel::make_condition<B>(s, 1, false);
    for (int i = 0; i < if_tasks; ++i) {
      auto body = keel::if_<B>(s, yes);
      keel::host::body_capture_scope into{side, body};  // captured empty
      into.end();
    }
    m = capture.end();
  }
  for (auto _ : state) {
    m.execute(s);
    s.synchronize();
  }
  report(state, if_tasks);
}
BENCHMARK(BM_if_empty_body_1000)->UseRealTime();

}  // namespace

KEEL_BENCH_COMPARE("BM_while_body_1000_x10", "BM_plain_model_10000",
                   ">= 0.667 of a plain 10,000-task model's throughput (a WHILE of 1,000 tasks x 10 at most 1.5x its time)");
KEEL_BENCH_COMPARE("BM_if_empty_body_1000", "BM_plain_tasks_1000",
                   ">= 0.333 of a replayed plain task's throughput (an IF with an empty body at most 3x its time)");
