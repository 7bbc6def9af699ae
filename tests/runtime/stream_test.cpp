// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support.hpp"

using keel::errc;
using keel_test::test_device;

TEST_CASE("stream: RAII checklist, every field after moves", "[runtime][stream]") {
  keel::host::stream empty;
  CHECK_FALSE(empty);
  CHECK(empty.get() == nullptr);

  keel::host::stream a{test_device()};
  REQUIRE(a);
  auto* const native_a = a.get();
  CHECK(a.native_handle() == native_a);
  CHECK(a.ref().native_handle() == native_a);

  SECTION("move construction leaves the source empty") {
    keel::host::stream b{std::move(a)};
    CHECK(b.get() == native_a);
    CHECK_FALSE(a);
    CHECK(a.get() == nullptr);
    KEEL_REQUIRE_ERROR(a.synchronize(), errc::invalid_handle, "moved from");
    KEEL_REQUIRE_ERROR(a.launch_host([] {}), errc::invalid_handle, "empty");
  }
  SECTION("move assignment destroys the old stream and takes the new") {
    keel::host::stream b{test_device()};
    int ran = 0;
    b.launch_host([&] { ++ran; });
    b = std::move(a);  // the old b waits for its work when destroyed
    CHECK(ran == 1);
    CHECK(b.get() == native_a);
    CHECK_FALSE(a);
  }
  SECTION("self-move keeps the stream") {
    keel::host::stream& self = a;
    a = std::move(self);
    CHECK(a.get() == native_a);
  }
  SECTION("swap exchanges both handles") {
    keel::host::stream b{test_device()};
    auto* const native_b = b.get();
    swap(a, b);
    CHECK(a.get() == native_b);
    CHECK(b.get() == native_a);
  }
  SECTION("release hands ownership over; adopt takes it back") {
    auto* raw = a.release();
    CHECK_FALSE(a);
    CHECK(raw == native_a);
    auto again = keel::host::stream::adopt(raw);
    CHECK(again.get() == native_a);
    KEEL_REQUIRE_ERROR(keel::host::stream::adopt(nullptr), errc::null_parameter, "null stream");
  }
  SECTION("reset and close empty the handle") {
    a.reset();
    CHECK_FALSE(a);
    keel::host::stream c{test_device()};
    c.close();
    CHECK_FALSE(c);
  }
}

TEST_CASE("stream: a ref views without owning and adopts a foreign native stream", "[runtime][stream]") {
  keel::host::stream owner{test_device()};
  auto ref = keel::host::stream_ref::adopt(owner.get());
  CHECK(ref == owner.ref());
  int ran = 0;
  ref.launch_host([&] { ++ran; });
  ref.synchronize();
  CHECK(ran == 1);
  keel::host::stream_ref empty;
  CHECK_FALSE(empty);
  KEEL_REQUIRE_ERROR(empty.synchronize(), errc::invalid_handle, "empty");
  KEEL_REQUIRE_ERROR(keel::host::stream_ref::adopt(nullptr), errc::null_parameter, "null stream");
  CHECK(ref.id() == owner.id());
  CHECK(&ref.device() == &test_device());
}

TEST_CASE("stream: tasks run in order, asynchronously, from any thread", "[runtime][stream]") {
  keel::host::stream s{test_device()};
  keel_test::gate g;
  g.hold(s);
  std::vector<int> order;
  for (int i = 0; i < 1500; ++i) s.launch_host([&order, i] { order.push_back(i); });
  CHECK_FALSE(s.query());  // enqueue returned before the work ran
  CHECK(order.empty());
  g.open();
  s.synchronize();
  REQUIRE(order.size() == 1500);
  for (int i = 0; i < 1500; ++i) REQUIRE(order[static_cast<std::size_t>(i)] == i);
  CHECK(s.query());

  // Several producers: each one's tasks stay in its order.
  std::vector<std::vector<int>> seen(3);
  std::vector<std::thread> producers;
  for (int p = 0; p < 3; ++p)
    producers.emplace_back([&, p] {
      for (int i = 0; i < 2000; ++i) s.launch_host([&seen, p, i] { seen[static_cast<std::size_t>(p)].push_back(i); });
    });
  for (auto& t : producers) t.join();
  s.synchronize();
  for (auto& v : seen) {
    REQUIRE(v.size() == 2000);
    for (int i = 0; i < 2000; ++i) REQUIRE(v[static_cast<std::size_t>(i)] == i);
  }
}

TEST_CASE("stream: large callables are boxed and still run once", "[runtime][stream]") {
  keel::host::stream s{test_device()};
  std::array<double, 32> big{};
  big[31] = 7;
  double sum = 0;
  for (int i = 0; i < 100; ++i) s.launch_host([big, &sum] { sum += big[31]; });
  s.synchronize();
  CHECK(sum == 700);
}

namespace {
void scale(keel::host::launch_context& ctx, float* data, std::size_t n, float alpha) {
  ctx.parallel_for(n, 64, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) data[i] *= alpha;
  });
}
}  // namespace

TEST_CASE("stream: a kernel launch carries its kind and arguments by value", "[runtime][stream]") {
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

TEST_CASE("stream: a failing task puts the stream in its error state", "[runtime][stream]") {
  keel::host::stream s{test_device()};
  keel_test::gate g;
  g.hold(s);
  int after = 0;
  s.launch_host([] { throw std::runtime_error("kernel exploded"); });
  s.launch_host([&] { ++after; });  // skipped: issued after the failure, before the report
  keel::host::event e{test_device()};
  e.record(s);  // control work still runs, so waiters elsewhere never deadlock
  g.open();
  e.synchronize();
  KEEL_REQUIRE_ERROR(s.query(), errc::task_failed, "kernel exploded");
  KEEL_REQUIRE_ERROR(s.query(), errc::task_failed, "kernel exploded");  // query keeps the state
  KEEL_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "kernel exploded");
  CHECK(after == 0);
  // synchronize cleared the state: new work runs again.
  s.launch_host([&] { ++after; });
  s.synchronize();
  CHECK(after == 1);
  CHECK(s.query());
}

TEST_CASE("stream: a task failure on a destroyed stream goes to the error handler", "[runtime][stream]") {
  static std::atomic<int> reports{0};
  auto previous = keel::set_error_handler([](std::error_code, const char*, const char*) noexcept { ++reports; });
  reports = 0;
  {
    keel::host::stream s{test_device()};
    s.launch_host([] { throw std::runtime_error("lost"); });
  }
  keel::set_error_handler(previous);
  CHECK(reports == 1);
}

TEST_CASE("stream: asynchronous and blocking copies", "[runtime][stream]") {
  keel::host::stream s{test_device()};
  std::vector<int> src(100), dst(100, 0);
  for (int i = 0; i < 100; ++i) src[static_cast<std::size_t>(i)] = i;
  s.copy_async(dst.data(), src.data(), 100 * sizeof(int), keel::copy_kind::host_to_host);
  s.synchronize();
  CHECK(dst == src);
  std::vector<int> dst2(100, 0);
  s.copy(dst2.data(), src.data(), 100 * sizeof(int), keel::copy_kind::host_to_host);
  CHECK(dst2 == src);
  KEEL_REQUIRE_ERROR(s.copy_async(keel::host_span(dst.data(), 4), keel::host_span(src.data(), 8)),
                     errc::invalid_parameter, "smaller");
}

TEST_CASE("stream: device synchronize waits for every stream", "[runtime][stream]") {
  keel::host::stream a{test_device()}, b{test_device()};
  std::atomic<int> n{0};
  for (int i = 0; i < 100; ++i) {
    a.launch_host([&] { ++n; });
    b.launch_host([&] { ++n; });
  }
  keel::host::synchronize(test_device());
  CHECK(n == 200);
}

TEST_CASE("stream: a task cannot synchronize its own stream", "[runtime][stream]") {
  keel::host::stream s{test_device()};
  keel::host::stream_ref self = s;
  std::string what;
  s.launch_host([self, &what] { what = keel_test::error_of([&] { self.synchronize(); }); });
  s.synchronize();
  CHECK(keel_test::contains(what, "cannot wait for its own stream"));
}

TEST_CASE("stream: a kernel chunk that throws fails the launch", "[runtime][stream]") {
  keel::host::stream s{test_device()};
  s.launch(keel::kernel_kind{"bad"}, [](keel::host::launch_context& ctx) {
    ctx.parallel_for(100, 10, [](std::size_t b, std::size_t) {
      if (b == 50) throw std::runtime_error("chunk 5 failed");
    });
  });
  KEEL_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "chunk 5 failed");
}

TEST_CASE("stream: a device with a spin budget of 0 never spins, and every wait still ends", "[runtime][stream]") {
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
  while (!a.native_handle()->sleeping.load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK(a.native_handle()->sleeping.load());
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
