// SPDX-License-Identifier: Apache-2.0
// Two ways to time a graph runner's step (pool_bench.cpp on the host backend,
// acl_bench.cpp on the ACL backend): the whole step, and only what issuing
// it costs the runner's thread. A Runner is default-constructible and has
// issue() (the step's calls), finish() (the wait for their work) and
// observed() (a value the work wrote, reported as the counter "x" so the
// work cannot be optimised away).
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>

namespace keel_bench {

/** A whole step: issue, then wait for the work; timed as wall-clock (UseRealTime). */
template <class Runner>
void whole_step(benchmark::State& state) {
  Runner run;
  for (auto _ : state) {
    run.issue();
    run.finish();
  }
  state.counters["x"] = static_cast<double>(run.observed());
}

/**
 * What issuing a step costs the runner's thread: the calls up to their
 * return, timed by hand (UseManualTime); the wait for the work that follows
 * is not timed. On a device the kernels run there, and this is the host's
 * share a replay saves.
 */
template <class Runner>
void issue_only(benchmark::State& state) {
  Runner run;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    run.issue();
    const auto stop = std::chrono::steady_clock::now();
    run.finish();
    state.SetIterationTime(std::chrono::duration<double>(stop - start).count());
  }
  state.counters["x"] = static_cast<double>(run.observed());
}

}  // namespace keel_bench
