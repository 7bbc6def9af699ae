// SPDX-License-Identifier: Apache-2.0
// Careless and hostile use, on every backend: each case here was a
// silent misbehaviour, a hang or undefined behaviour before, and is now an
// ordering that holds or a clear keel::error.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

#include "test_support.hpp"

using keel::errc;
using namespace std::chrono_literals;

KEEL_BACKEND_TEST("event: a later record on another stream does not release a wait for an earlier one",
                  "[runtime][event][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream slow{dev}, fast{dev}, consumer{dev};
  event e{dev};
  keel_test::gate g;
  std::atomic<int> produced{0};
  int seen = -1;
  g.hold(slow.ref());
  slow.launch_host([&] { produced = 1; });
  e.record(slow);     // record #1: behind the gate
  consumer.wait(e);   // waits for record #1
  consumer.launch_host([&] { seen = produced.load(); });
  e.record(fast);     // record #2 on an idle stream completes at once
  fast.synchronize();
  CHECK(e.query());   // query and synchronize refer to the last record: #2
  e.synchronize();
  std::this_thread::sleep_for(5ms);
  CHECK(seen == -1);  // the consumer still waits for record #1
  g.open();
  consumer.synchronize();
  CHECK(seen == 1);
  slow.synchronize();
}

KEEL_BACKEND_TEST("event: synchronize and query refer to the record that was last when called",
                  "[runtime][event][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream fast{dev}, slow{dev};
  event e{dev};
  keel_test::gate g;
  e.record(fast);
  fast.synchronize();
  CHECK(e.query());
  g.hold(slow.ref());
  e.record(slow);  // the last record is now behind the gate
  CHECK_FALSE(e.query());
  std::atomic<bool> synced{false};
  std::thread waiter([&] {
    e.synchronize();
    synced = true;
  });
  std::this_thread::sleep_for(5ms);
  CHECK_FALSE(synced.load());
  g.open();
  waiter.join();
  CHECK(synced.load());
  CHECK(e.query());
  slow.synchronize();
}

KEEL_BACKEND_TEST("model: a task that throws inside a model still runs the model's external-event record",
                  "[runtime][model][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, other{dev};
  event done{dev, keel::event_flags::external};
  int after_throw = 0;
  model m;
  {
    capture_scope capture{s};
    s.launch_host([] { throw std::runtime_error("inside the model"); });
    s.launch_host([&] { ++after_throw; });  // work after the failure: skipped
    done.record(s);                        // an event operation: still runs
    m = capture.end();
  }
  m.execute(s);
  other.wait(done);  // would hang forever if the record did not run
  other.synchronize();
  KEEL_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "inside the model");
  CHECK(after_throw == 0);
}

KEEL_BACKEND_TEST("model: an execution skipped by the stream's error state still runs its event records",
                  "[runtime][model][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, other{dev};
  event done{dev, keel::event_flags::external};
  int ran = 0;
  model m;
  {
    capture_scope capture{s};
    s.launch_host([&] { ++ran; });
    done.record(s);
    m = capture.end();
  }
  s.launch_host([] { throw std::runtime_error("before the execution"); });
  m.execute(s);  // skipped: the stream is in its error state
  other.wait(done);
  other.synchronize();
  KEEL_REQUIRE_ERROR(s.synchronize(), errc::task_failed, "before the execution");
  CHECK(ran == 0);
  m.execute(s);  // the error state is cleared: the model runs again
  s.synchronize();
  CHECK(ran == 1);
}

namespace {
// A callable whose copy constructor throws on demand.
struct throwing_copy {
  std::atomic<int>* runs;
  bool throw_on_copy;
  throwing_copy(std::atomic<int>* r, bool t) : runs(r), throw_on_copy(t) {}
  throwing_copy(const throwing_copy& o) : runs(o.runs), throw_on_copy(o.throw_on_copy) {
    if (throw_on_copy) throw std::runtime_error("copy refused");
  }
  throwing_copy(throwing_copy&& o) noexcept : runs(o.runs), throw_on_copy(false) {}
  void operator()() const { runs->fetch_add(1); }
};
}  // namespace

KEEL_BACKEND_TEST("stream: launch_host of a callable whose copy throws leaves the stream usable",
                  "[runtime][stream][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  std::atomic<int> runs{0};
  const throwing_copy refuses{&runs, true};
  CHECK_THROWS_AS(s.launch_host(refuses), std::runtime_error);
  s.launch_host(throwing_copy{&runs, false});  // would spin forever on a ring left locked
  s.synchronize();
  CHECK(runs == 1);
}

KEEL_BACKEND_TEST("buffer: a size no object can have is out_of_memory, and nothing is reserved",
                  "[runtime][buffer][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  for (std::size_t bytes : {SIZE_MAX, SIZE_MAX - 62, static_cast<std::size_t>(PTRDIFF_MAX) + 1}) {
    INFO(bytes);
    KEEL_REQUIRE_ERROR(device_buffer(s, bytes), errc::out_of_memory, "larger than the largest object");
    KEEL_REQUIRE_ERROR(pinned_buffer(s, bytes), errc::out_of_memory, "larger than the largest object");
  }
  device_buffer fine{s, 64};  // the stream and the device still allocate
  CHECK(fine.size() == 64);
}

KEEL_BACKEND_TEST("scopes: destroying the stream while a capture, group or update scope on it lives is safe",
                  "[runtime][model][misuse]") {
  KEEL_USING_BACKEND(TestType);
  std::size_t models_before = 0;
  if constexpr (TestType::is_host) models_before = dev.live_models();
  {
    std::optional<stream> s;
    s.emplace(dev);
    capture_scope capture{*s};
    s->launch_host([] {});
    s.reset();  // discards the capture (reported), then the scope outlives the stream
    CHECK_THROWS_AS((void)capture.end(), keel::error);
  }  // the scope's destructor touches nothing freed (ASan)
  {
    std::optional<stream> s;
    s.emplace(dev);
    capture_scope capture{*s};
    task_group_scope mark{*s};
    float out = 0, one = 1;
    TestType::axpy(*s, &out, &one, &one, 1.0f);
    s.reset();
  }
  if constexpr (TestType::is_host) CHECK(dev.live_models() == models_before);  // the discarded capture's slot is back
  stream main{dev};
  float out = 0, one = 1;
  model m;
  task_group group;
  {
    capture_scope capture{main};
    task_group_scope mark{main};
    TestType::axpy(main, &out, &one, &one, 1.0f);
    group = mark.end();
    m = capture.end();
  }
  {
    std::optional<stream> u;
    u.emplace(dev);
    update_scope update{*u, group};
    TestType::axpy(*u, &out, &one, &one, 5.0f);
    u.reset();  // abandons the update
  }
  m.execute(main);
  main.synchronize();
  CHECK(out == 2.0f);  // the group is unchanged
  stream u2{dev};
  {
    update_scope update{u2, group};  // the group is free to update again
    TestType::axpy(u2, &out, &one, &one, 3.0f);
    update.end();
  }
  u2.synchronize();
  m.execute(main);
  main.synchronize();
  CHECK(out == 4.0f);
}

namespace {
std::atomic<int> deadlock_reports{0};
void count_deadlocks(std::error_code code, const char*, const char*) noexcept {
  if (keel_test::matches(code, keel::errc::would_deadlock)) ++deadlock_reports;
}
// Waits (bounded) for a flag another thread sets.
bool eventually(const std::atomic<bool>& flag) {
  for (int i = 0; i < 5000 && !flag.load(); ++i) std::this_thread::sleep_for(1ms);
  return flag.load();
}
}  // namespace

KEEL_BACKEND_TEST("stream: a task that destroys its own stream defers the destruction, reported as would_deadlock",
                  "[runtime][stream][misuse]") {
  KEEL_USING_BACKEND(TestType);
  deadlock_reports = 0;
  auto previous = keel::set_error_handler(&count_deadlocks);
  auto owner = std::make_unique<stream>(dev);
  keel_test::gate g;
  std::atomic<bool> later_ran{false}, destroyed{false};
  g.hold(owner->ref());
  owner->launch_host([&] {
    owner.reset();  // the stream's own task destroys it: must not terminate the process
    destroyed = true;
  });
  owner->launch_host([&] { later_ran = true; });  // issued before the destruction: still runs
  g.open();
  CHECK(eventually(destroyed));
  CHECK(eventually(later_ran));
  for (int i = 0; i < 5000 && deadlock_reports.load() == 0; ++i) std::this_thread::sleep_for(1ms);
  CHECK(deadlock_reports.load() == 1);
  if constexpr (!TestType::is_host) dev.finish_deferred_destroys();  // the destruction has ended
  keel::set_error_handler(previous);
}

TEST_CASE("host stream: a task that fills its own stream's queue gets would_deadlock, not a hang",
          "[runtime][stream][host][misuse]") {
  keel::host::stream s{keel_test::test_device()};
  std::atomic<bool> refused{false};
  std::atomic<int> issued{0};
  s.launch_host([&] {
    try {
      for (int i = 0; i < 10000; ++i) {
        s.launch_host([] {});
        ++issued;
      }
    } catch (const keel::error& e) {
      refused = e.code() == keel::make_error_code(keel::errc::would_deadlock);
    }
  });
  s.synchronize();
  CHECK(refused.load());
  CHECK(issued.load() > 2000);  // the queue filled up first
  s.launch_host([] {});         // and the stream still takes work
  s.synchronize();
}

TEST_CASE("host device: destroying the device before its streams, events, models and buffers is safe",
          "[runtime][host][misuse]") {
  auto dev = std::make_unique<keel::host::device>(keel::host::device_options{2, 4, 4});
  keel::host::stream s{*dev};
  keel::host::event e{*dev};
  keel::host::device_buffer buf{s, 64};
  int runs = 0;
  keel::host::model m;
  {
    keel::host::capture_scope capture{s};
    s.launch_host([&] { ++runs; });
    m = capture.end();
  }
  dev.reset();  // the objects keep the device's state alive
  CHECK(s.device().compute_workers() == 2);
  m.execute(s);
  e.record(s);
  s.synchronize();
  CHECK(e.query());
  CHECK(runs == 1);
  keel::host::stream late{s.device()};  // the device is still usable through its objects
  late.wait(e);
  late.synchronize();
}

KEEL_BACKEND_TEST("timed waits: synchronize(timeout) on streams, events and the device throws timeout and loses nothing",
                  "[runtime][stream][event][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  event e{dev};
  keel_test::gate g;
  int ran = 0;
  g.hold(s.ref());
  s.launch_host([&] { ++ran; });
  e.record(s);
  KEEL_REQUIRE_ERROR(s.synchronize(20ms), errc::timeout, "did not finish");
  KEEL_REQUIRE_ERROR(e.synchronize(std::chrono::microseconds(20000)), errc::timeout, "did not complete");
  KEEL_REQUIRE_ERROR(TestType::backend::synchronize_device_for(dev, 20ms), errc::timeout, "did not finish");
  CHECK(ran == 0);
  g.open();
  s.synchronize(std::chrono::seconds(10));  // the work went on, nothing was lost
  e.synchronize(std::chrono::seconds(10));
  TestType::backend::synchronize_device_for(dev, std::chrono::seconds(10));
  CHECK(ran == 1);
  s.launch_host([&] { ++ran; });  // the stream is still usable
  s.synchronize();
  CHECK(ran == 2);
}

KEEL_BACKEND_TEST("timed waits: a stream's bounded wait fails the stream with timeout when the record never comes",
                  "[runtime][stream][event][misuse]") {
  KEEL_USING_BACKEND(TestType);
  stream producer{dev}, consumer{dev};
  event e{dev};
  keel_test::gate g;
  g.hold(producer.ref());
  e.record(producer);
  typename TestType::slot after{0};
  int host_after = 0;
  consumer.wait(e, 20ms);
  TestType::store(consumer, &after, 1);              // skipped: the wait failed first
  consumer.launch_host([&] { ++host_after; });  // skipped too (on ACL: delivered, not run; its record is freed)
  KEEL_REQUIRE_ERROR(consumer.synchronize(), errc::task_failed, "did not end");
  CHECK(TestType::load(after) == 0);
  CHECK(host_after == 0);
  g.open();
  producer.synchronize();
  consumer.wait(e, std::chrono::seconds(10));  // the record is complete: the wait passes
  TestType::store(consumer, &after, 2);
  consumer.synchronize();
  CHECK(TestType::load(after) == 2);
}
