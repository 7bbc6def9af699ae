// SPDX-License-Identifier: Apache-2.0
// What only the host backend has: launch contexts and compute workers, device
// limits set per device, its own rule texts, and rules the ACL backend
// reports differently (tests/acl and acl_test.cpp cover ACL's side).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_support.hpp"

using keel::errc;
using keel_test::test_device;

namespace {
void scale(keel::host::launch_context& ctx, float* data, std::size_t n, float alpha) {
  ctx.parallel_for(n, 64, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) data[i] *= alpha;
  });
}
}  // namespace

TEST_CASE("host stream: a kernel launch carries its kind and arguments by value", "[runtime][stream][host]") {
  keel::host::stream s{test_device()};
  std::vector<float> data(1000, 2.0f);
  float alpha = 3.0f;
  s.launch(keel::kernel_kind{"scale"}, &scale, data.data(), data.size(), alpha);
  alpha = 100.0f;  // the task holds its own copy
  s.synchronize();
  for (float v : data) REQUIRE(v == 6.0f);

  // The context reaches the device's compute workers.
  std::atomic<unsigned> workers{0};
  s.launch(keel::kernel_kind{"probe"}, [&](keel::host::launch_context& ctx) { workers = ctx.workers(); });
  s.synchronize();
  CHECK(workers == test_device().compute_workers());
}

TEST_CASE("host stream: a task cannot synchronize its own stream", "[runtime][stream][host]") {
  keel::host::stream s{test_device()};
  keel::host::stream_ref self = s;
  std::string what;
  s.launch_host([self, &what] { what = keel_test::error_of([&] { self.synchronize(); }); });
  s.synchronize();
  CHECK(keel_test::contains(what, "cannot wait for its own stream"));
}

TEST_CASE("host stream: a kernel chunk that throws fails the launch", "[runtime][stream][host]") {
  keel::host::stream s{test_device()};
  s.launch(keel::kernel_kind{"bad"}, [](keel::host::launch_context& ctx) {
    ctx.parallel_for(100, 10, [](std::size_t b, std::size_t) {
      if (b == 50) throw std::runtime_error("chunk 5 failed");
    });
  });
  KEEL_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "chunk 5 failed");
}

TEST_CASE("host device: back-to-back split kernels from several streams run every chunk once, helpers spinning or asleep",
          "[runtime][stream][host]") {
  // Helpers spin for the spin budget after a job and then sleep; a job
  // arrives while they spin, while they sleep, and between the two. A
  // helper that joined a job after its launcher returned would run chunks
  // of a dead job (ASan) or count a chunk twice (the check below).
  for (const long budget_us : {50L, 0L}) {
    keel::host::device_options options;
    options.compute_workers = 3;
    options.spin_budget = std::chrono::microseconds{budget_us};
    keel::host::device dev{options};
    constexpr int launches = 200;
    constexpr std::size_t chunks = 8;
    std::vector<std::atomic<int>> runs(2 * launches * chunks);
    {
      keel::host::stream a{dev}, b{dev};
      for (int i = 0; i < launches; ++i) {
        for (int s = 0; s < 2; ++s) {
          std::atomic<int>* mine = runs.data() + (static_cast<std::size_t>(s) * launches + i) * chunks;
          (s == 0 ? a : b).launch(keel::kernel_kind{"split"}, [mine](keel::host::launch_context& ctx) {
            ctx.parallel_for(chunks * 16, 16, [mine](std::size_t begin, std::size_t) { mine[begin / 16].fetch_add(1); });
          });
        }
        // Now and then a pause longer than the budget, so helpers go to sleep.
        if (i % 50 == 49) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      a.synchronize();
      b.synchronize();
    }
    std::size_t wrong = 0;
    for (auto& r : runs) wrong += r.load() != 1;
    INFO("spin budget " << budget_us << " us");
    CHECK(wrong == 0);
  }
}

TEST_CASE("host event: the device limits external events, a pool's events count", "[runtime][event][host]") {
  keel::host::device dev{keel::host::device_options{1, 4, 2}};
  keel::host::stream s{dev};
  {
    keel::host::event e1{dev, keel::event_flags::external}, e2{dev, keel::event_flags::external};
    CHECK(dev.live_external_events() == 2);
    KEEL_REQUIRE_ERROR((keel::host::event{dev, keel::event_flags::external}), errc::resource_limit, "external events");
    keel::host::event fine{dev};  // default events are not limited
  }
  CHECK(dev.live_external_events() == 0);
  keel::host::external_event_pool pool{dev, 2};
  {
    auto loan = pool.acquire(s);
    auto second = pool.acquire(s);
    CHECK(dev.live_external_events() == 2);
  }
  auto again = pool.acquire(s);
  s.synchronize();
  CHECK(dev.live_external_events() == 2);  // the pool keeps its events
}

TEST_CASE("host model: the device limits live models", "[runtime][model][host]") {
  keel::host::device dev{keel::host::device_options{1, 2, 2}};
  keel::host::stream s{dev};
  auto make = [&] {
    keel::host::capture_scope capture{s};
    s.launch_host([] {});
    return capture.end();
  };
  auto m1 = make();
  auto m2 = make();
  CHECK(dev.live_models() == 2);
  KEEL_REQUIRE_ERROR(make(), errc::resource_limit, "live models");
  CHECK_FALSE(s.is_capturing());
  CHECK(dev.live_models() == 2);
  m1.reset();
  auto m3 = make();
  CHECK(dev.live_models() == 2);
}

TEST_CASE("host model: destroying a stream that captures ends its capture cleanly", "[runtime][model][host]") {
  static std::atomic<int> reports{0};
  auto previous = keel::set_error_handler([](std::error_code, const char*, const char*) noexcept { ++reports; });
  reports = 0;
  const std::size_t live = test_device().live_models();
  {
    keel::host::stream doomed{test_device()};
    keel::host::backend::capture_begin(keel::detail::handle_of(doomed), keel::capture_mode::global);
    doomed.launch_host([] {});
  }  // the origin goes away mid-capture: discarded and reported
  CHECK(reports == 1);
  CHECK(test_device().live_models() == live);

  keel::host::stream s{test_device()};
  keel::host::event fork{test_device()};
  keel::host::capture_scope capture{s};
  {
    keel::host::stream side{test_device()};
    fork.record(s);
    side.wait(fork);
  }  // a joined stream goes away: the capture is invalidated
  CHECK(s.capture_status().state == keel::capture_state::invalidated);
  KEEL_REQUIRE_ERROR((void)capture.end(), errc::capture_violation, "invalidated");
  keel::set_error_handler(previous);
}

TEST_CASE("host task_group: a capture cannot end while another stream marks a group", "[runtime][task_group][host]") {
  // ACL ends (discards) such a capture instead: see the emulation test in acl_test.cpp.
  keel::host::stream s{test_device()}, side{test_device()};
  keel::host::event fork{test_device()}, join{test_device()};
  keel::host::capture_scope capture{s};
  fork.record(s);
  side.wait(fork);
  {
    keel::host::task_group_scope mark{s};
    s.launch(keel_test::axpy_kind, [](keel::host::launch_context&) {});
    KEEL_REQUIRE_ERROR(side.launch(keel_test::axpy_kind, [](keel::host::launch_context&) {}), errc::capture_violation,
                       "no other capturing stream may issue work");
    KEEL_REQUIRE_ERROR((void)capture.end(), errc::capture_violation, "a task group is still open");
    (void)mark.end();
  }
  side.launch(keel_test::axpy_kind, [](keel::host::launch_context&) {});
  join.record(side);
  s.wait(join);
  auto model = capture.end();
  CHECK(model.group_count() == 1);
}

TEST_CASE("host stream: a device with a spin budget of 0 never spins, and every wait still ends", "[runtime][stream][host]") {
  // With no spin, each idle worker, synchronize() and event wait takes the
  // sleeping path at once: what the spin usually hides is exercised here.
  keel::host::device_options options;
  options.compute_workers = 2;
  options.spin_budget = std::chrono::microseconds{0};
  keel::host::device dev{options};
  CHECK(dev.spin_budget() == std::chrono::microseconds{0});
  options.spin_budget = std::chrono::microseconds{-5};
  CHECK(keel::host::device{options}.spin_budget() == std::chrono::microseconds{0});
  CHECK(keel::host::device{}.spin_budget() == std::chrono::microseconds{50});

  keel::host::stream a{dev}, b{dev};
  // The worker goes to sleep once idle; work issued then wakes it.
  a.synchronize();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!a.native_handle()->wake.asleep() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(a.native_handle()->wake.asleep());
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) a.launch_host([&order, i] { order.push_back(i); });
  a.synchronize();
  REQUIRE(order.size() == 100);
  for (int i = 0; i < 100; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);

  // A cross-stream wait that must sleep, and a host thread waiting on the event.
  keel::host::event e{dev};
  std::atomic<int> step{0};
  a.launch_host([&step] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    step = 1;
  });
  e.record(a);
  b.wait(e);
  int seen = -1;
  b.launch_host([&] { seen = step.load(); });
  e.synchronize();
  b.synchronize();
  CHECK(seen == 1);
}

TEST_CASE("host event: on an idle stream a record, signal or reset takes effect before the call returns, on a busy "
          "one in its turn",
          "[runtime][event][host]") {
  keel::host::device& dev = test_device();
  keel::host::stream s{dev}, waiting{dev};
  keel::host::event e{dev}, x{dev, keel::event_flags::external};
  s.synchronize();  // idle: every task issued to it has finished
  e.record(s);
  CHECK(e.query());  // complete already, no hop through the worker
  x.record(s);
  CHECK(x.query());  // signalled already
  s.reset_event(x);
  CHECK_FALSE(x.query());

  // Busy: a host task holds the stream, and what is issued after it waits for it.
  std::atomic<bool> go{false};
  s.launch_host([&go] {
    while (!go.load()) std::this_thread::yield();
  });
  e.record(s);
  x.record(s);
  CHECK_FALSE(e.query());
  CHECK_FALSE(x.query());
  waiting.wait(x);  // an execution's fence, released by the signal in its turn
  std::atomic<int> after{0};
  waiting.launch_host([&after] { after = 1; });
  go = true;
  waiting.synchronize();
  CHECK(after.load() == 1);
  s.synchronize();
  CHECK(e.query());
  CHECK(x.query());

  // A signal from an idle stream releases a waiting stream without the signalling stream's worker.
  s.reset_event(x);
  CHECK_FALSE(x.query());
  waiting.wait(x);
  waiting.launch_host([&after] { after = 2; });
  s.synchronize();
  x.record(s);
  waiting.synchronize();
  CHECK(after.load() == 2);
}
