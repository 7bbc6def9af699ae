// SPDX-License-Identifier: Apache-2.0
// Task groups and updates on every backend (see test_support.hpp). The
// kernels are the fixture's axpy (out = tmp + alpha * other) and copy.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support.hpp"

using keel::errc;

namespace {

template <class F>
struct fixture {
  typename F::stream s{F::device()};
  typename F::stream u{F::device()};
  float out = 0, tmp = 1.0f, other = 1.0f, copied = 0;
  typename F::model model;
  typename F::task_group group;

  // Captures: [copy] [group: axpy(alpha)] [copy].
  void capture(float alpha) {
    typename F::capture_scope capture{s};
    F::copy(s, &copied, &tmp);
    {
      typename F::task_group_scope mark{s};
      CHECK(s.capture_status().group_open);
      F::axpy(s, &out, &tmp, &other, alpha);
      group = mark.end();
    }
    F::copy(s, &copied, &out);
    model = capture.end();
  }
  void update(float alpha) {
    typename F::update_scope scope{u, group};
    F::axpy(u, &out, &tmp, &other, alpha);
    scope.end();
  }
  float run() {
    model.execute(s);
    s.synchronize();
    return out;
  }
};

}  // namespace

// TASK_COUNT: checks task_group::size and model::task_count.
KEEL_BACKEND_TEST("task_group: RAII checklist, every field after moves",
                     "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  fixture<TestType> f;
  f.capture(2.0f);
  auto* const native = f.group.get();
  CHECK(f.group.size() == 1);
  CHECK(f.group.model_alive());
  task_group moved{std::move(f.group)};
  CHECK(moved.get() == native);
  CHECK(moved.size() == 1);
  CHECK_FALSE(f.group);
  KEEL_REQUIRE_ERROR(f.group.size(), errc::invalid_handle, "moved from");
  KEEL_REQUIRE_ERROR({ update_scope attempt(f.u, f.group); }, errc::invalid_handle, "empty");
  f.group = std::move(moved);
  CHECK(f.group.get() == native);
  swap(f.group, moved);
  CHECK(moved.get() == native);
  auto view = task_group_ref::adopt(moved.get());
  CHECK(view.size() == 1);
  auto* raw = moved.release();
  auto back = task_group::adopt(raw);
  CHECK(back.get() == native);
  CHECK(f.model.group_count() == 1);
  CHECK(f.model.task_count() == 3);
}

KEEL_BACKEND_TEST("task_group: a sequential update replaces the group's arguments", "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  fixture<TestType> f;
  f.capture(1.0f);
  CHECK(f.model.group_count() == 1);
  CHECK(f.group.model_alive());
  CHECK(f.run() == 2.0f);
  {
    update_scope update{f.u, f.group};
    CHECK(f.u.capture_status().updating);
    TestType::axpy(f.u, &f.out, &f.tmp, &f.other, 4.0f);
    CHECK(f.run() == 2.0f);  // not yet: the update ends later
    update.end();
  }
  CHECK_FALSE(f.u.capture_status().updating);
  f.u.synchronize();  // takes effect when the update stream reaches the end
  CHECK(f.run() == 5.0f);
  for (int i = 0; i < 20; ++i) CHECK(f.run() == 5.0f);
  CHECK(f.copied == 5.0f);
  // An update with no tasks leaves the group as it was.
  {
    update_scope update{f.u, f.group};
    update.end();
  }
  f.u.synchronize();
  CHECK(f.run() == 5.0f);
  f.model.reset();
  CHECK_FALSE(f.group.model_alive());
}

KEEL_BACKEND_TEST("task_group: updates on a busy update stream keep stream order, also when adjacent ones merge",
                  "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  fixture<TestType> f;
  f.capture(1.0f);
  CHECK(f.run() == 2.0f);
  event gate{dev, keel::event_flags::external};
  f.u.wait(gate);  // the update stream is busy until the gate opens: every swap below is pending
  std::vector<float> seen;
  auto observe = [&] {
    f.model.execute(f.u);
    f.u.launch_host([&] { seen.push_back(f.out); });
  };
  f.update(3.0f);
  f.update(4.0f);  // adjacent to the pending swap of 3: takes its place
  observe();       // sees 4
  f.update(5.0f);  // after the execution: a swap of its own
  observe();       // sees 5
  f.update(6.0f);
  {
    update_scope empty{f.u, f.group};  // no tasks: changes nothing, issues nothing
    empty.end();
  }
  f.update(7.0f);  // merges with 6
  observe();       // sees 7
  CHECK(f.run() == 2.0f);  // nothing took effect yet
  {
    update_scope refused{f.u, f.group};  // a refused update leaves the pending swap alone
    TestType::copy(f.u, &f.copied, &f.tmp);
    KEEL_REQUIRE_ERROR(refused.end(), errc::update_violation, "the group is unchanged");
  }
  gate.record(f.s);
  f.u.synchronize();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0] == 5.0f);
  CHECK(seen[1] == 6.0f);
  CHECK(seen[2] == 8.0f);
  CHECK(f.run() == 8.0f);
  // Idle update stream: the update takes effect when end() returns.
  f.update(9.0f);
  CHECK(f.run() == 10.0f);
}

KEEL_BACKEND_TEST("task_group: replacements must match the group in number and kind", "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  fixture<TestType> f;
  f.capture(1.0f);
  SECTION("too many") {
    update_scope update{f.u, f.group};
    TestType::axpy(f.u, &f.out, &f.tmp, &f.other, 9.0f);
    TestType::axpy(f.u, &f.out, &f.tmp, &f.other, 9.0f);
    KEEL_REQUIRE_ERROR(update.end(), errc::update_violation, "has 1 tasks and the update issued 2");
  }
  SECTION("wrong kind") {
    update_scope update{f.u, f.group};
    TestType::copy(f.u, &f.out, &f.tmp);
    KEEL_REQUIRE_ERROR(update.end(), errc::update_violation, "is kernel 'axpy' and the update issued 'copy'");
  }
  SECTION("only operator launches") {
    update_scope update{f.u, f.group};
    KEEL_REQUIRE_ERROR(f.u.launch_host([] {}), errc::update_violation, "not a host callable");
    int x = 0;
    KEEL_REQUIRE_ERROR(f.u.copy_async(&x, &x, sizeof x, keel::copy_kind::host_to_host), errc::update_violation,
                       "not a copy");
    event e{dev};
    KEEL_REQUIRE_ERROR(e.record(f.u), errc::update_violation, "not an event operation");
    update.abandon();
  }
  SECTION("an update with no tasks leaves the group as it was") {
    update_scope update{f.u, f.group};
    update.end();
  }
  if (TestType::abandon_discards_update) {
    SECTION("an exception abandons the update") {
      try {
        update_scope update{f.u, f.group};
        TestType::axpy(f.u, &f.out, &f.tmp, &f.other, 9.0f);
        throw std::runtime_error("changed my mind");
      } catch (const std::runtime_error&) {
      }
      CHECK_FALSE(f.u.capture_status().updating);
    }
  }
  f.u.synchronize();
  CHECK(f.run() == 2.0f);  // the model is unchanged in every case
  // and the group can be updated again afterwards
  f.update(3.0f);
  f.u.synchronize();
  CHECK(f.run() == 4.0f);
}

KEEL_BACKEND_TEST("task_group: an exception leaves the update, and the stream can update again", "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  fixture<TestType> f;
  f.capture(1.0f);
  try {
    update_scope update{f.u, f.group};
    throw std::runtime_error("changed my mind");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(f.u.capture_status().updating);
  f.update(3.0f);
  f.u.synchronize();
  CHECK(f.run() == 4.0f);
}

// TASK_COUNT: checks task_group::size.
KEEL_BACKEND_TEST("task_group: only operator launches may be marked into a group",
                     "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev};
  event e{dev}, ext{dev, keel::event_flags::external};
  int x = 0;
  float out = 0, in = 1;
  capture_scope capture{s};
  task_group_scope mark{s};
  KEEL_REQUIRE_ERROR(s.launch_host([] {}), errc::capture_violation, "not a host callable; stream #");
  KEEL_REQUIRE_ERROR(s.copy_async(&x, &x, sizeof x, keel::copy_kind::host_to_host), errc::capture_violation,
                     "task group open: yes");
  KEEL_REQUIRE_ERROR(e.record(s), errc::capture_violation, "not an event record");
  KEEL_REQUIRE_ERROR(s.wait(ext), errc::capture_violation, "not an event operation");
  KEEL_REQUIRE_ERROR({ task_group_scope nested{s}; }, errc::capture_violation, "already marking");
  TestType::axpy(s, &out, &in, &in, 1.0f);
  auto group = mark.end();
  CHECK(group.size() == 1);
  KEEL_REQUIRE_ERROR(mark.end(), errc::invalid_state, "already ended");
}

KEEL_BACKEND_TEST("task_group: while a group is marked, no other capturing stream may issue work",
                  "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, side{dev};
  float out = 0, in = 1;
  capture_scope first{s};
  capture_scope second{side};
  task_group_scope mark{s};
  TestType::axpy(s, &out, &in, &in, 1.0f);
  bool thrown = false;
  try {
    TestType::axpy(side, &out, &in, &in, 1.0f);
  } catch (const keel::error& e) {
    INFO(e.what());
    thrown = true;
    CHECK(TestType::is_launch_error(e.code(), errc::capture_violation));
    if (TestType::is_host) CHECK(keel_test::contains(e.what(), "no other capturing stream may issue work"));
  }
  CHECK(thrown);
}

KEEL_BACKEND_TEST("task_group: groups are marked during capture and updated on streams that are not capturing",
                  "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  fixture<TestType> f;
  KEEL_REQUIRE_ERROR({ task_group_scope mark{f.s}; }, errc::capture_violation, "is not capturing");
  f.capture(1.0f);
  capture_scope capture{f.u};
  KEEL_REQUIRE_ERROR({ update_scope attempt(f.u, f.group); }, errc::capture_violation,
                     "updates are issued on a stream that is not capturing");
}

KEEL_BACKEND_TEST("task_group: one update of a group at a time; a second is an error, never a race",
                  "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  fixture<TestType> f;
  f.capture(1.0f);
  stream u2{dev};
  update_scope first{f.u, f.group};
  std::string second;
  std::thread([&] { second = keel_test::error_of([&] { update_scope again{u2, f.group}; }); }).join();
  CHECK_FALSE(second == "no error");
  if (TestType::is_host) CHECK(keel_test::contains(second, "is already being updated"));
  KEEL_REQUIRE_ERROR({ update_scope attempt(u2, f.group); }, errc::update_violation, "is already being updated");
  KEEL_REQUIRE_ERROR({ update_scope attempt(f.u, f.group); }, errc::update_violation, "already updating");
  first.end();
  update_scope third{u2, f.group};  // free again
  third.end();
}

// TASK_COUNT: checks task_group::size (and ACL reports the dead group's handle as invalid).
KEEL_BACKEND_TEST("task_group: updating a group whose model was destroyed is an error",
                     "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  fixture<TestType> f;
  f.capture(1.0f);
  f.model.reset();
  CHECK_FALSE(f.group.model_alive());
  CHECK(f.group.size() == 1);  // the handle itself stays valid
  // Each backend's documented status for it (TestType::dead_group_update):
  // invalid_state on the host, ACL's invalid handle on ACL.
  KEEL_REQUIRE_ERROR({ update_scope attempt(f.u, f.group); }, TestType::dead_group_update, "was destroyed");
}

// Host only: the last section drives the host backend directly.
TEST_CASE("task_group: the model and the group handle may go while an update is open - host only",
          "[runtime][task_group][host]") {
  // The updating stream holds the group through its claim alone: the group
  // outlives its last reference until the update ends, then goes (ASan and
  // TSan runs check that it goes exactly once).
  fixture<host> f;
  f.capture(1.0f);
  SECTION("end refuses") {
    keel::host::update_scope update{f.u, f.group};
    host::axpy(f.u, &f.out, &f.tmp, &f.other, 3.0f);
    f.model.reset();
    f.group.reset();
    KEEL_REQUIRE_ERROR(update.end(), errc::invalid_state, "was destroyed");
  }
  SECTION("abandoned") {
    keel::host::update_scope update{f.u, f.group};
    host::axpy(f.u, &f.out, &f.tmp, &f.other, 3.0f);
    f.model.reset();
    f.group.reset();
    update.abandon();
  }
  SECTION("the update stream is destroyed") {
    // Through the backend: a scope must not outlive its stream, but a
    // stream destroyed mid-update abandons the update itself.
    auto side = std::make_unique<keel::host::stream>(keel_test::test_device());
    keel::host::backend::update_begin(side->native_handle(), f.group.native_handle());
    host::axpy(*side, &f.out, &f.tmp, &f.other, 3.0f);
    CHECK(side->capture_status().updating);
    f.model.reset();
    f.group.reset();
    side.reset();
  }
  SECTION("a swap still pending when they go") {
    keel::host::event gate{keel_test::test_device(), keel::event_flags::external};
    f.u.wait(gate);  // busy: the update's swap is enqueued, and keeps the group alive
    {
      keel::host::update_scope update{f.u, f.group};
      host::axpy(f.u, &f.out, &f.tmp, &f.other, 3.0f);
      update.end();
    }
    f.model.reset();
    f.group.reset();
    gate.record(f.s);
    f.u.synchronize();
  }
  CHECK_FALSE(f.u.capture_status().updating);
}

KEEL_BACKEND_TEST("task_group: a concurrent update through an external event takes effect in the running execution",
                  "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, u{dev};
  external_event_pool pool{dev, 1};
  concurrent_update fenced{pool.acquire(u)};
  float out = 0, tmp = 1.0f, other = 1.0f;
  std::vector<float> seen;
  model m;
  task_group group;
  {
    capture_scope capture{s};
    fenced.fence(s);  // wait for the update stream's signal, then reset it
    task_group_scope mark{s};
    TestType::axpy(s, &out, &tmp, &other, 1.0f);
    group = mark.end();
    s.launch_host([&] { seen.push_back(out); });
    m = capture.end();
  }
  fenced.release(u);  // iteration 0 passes the fence unchanged
  m.execute(s);
  s.synchronize();
  m.execute(s);  // iteration 1 blocks at the fence until the update is recorded
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK(seen.size() == 1);
  fenced.update(u, group, [&](stream_ref us) { TestType::axpy(us, &out, &tmp, &other, 7.0f); });
  s.synchronize();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == 2.0f);
  CHECK(seen[1] == 8.0f);  // the iteration after the update sees it
  // A refused update still releases the fence: the execution runs the old group.
  m.execute(s);
  KEEL_REQUIRE_ERROR(fenced.update(u, group, [&](stream_ref us) { us.launch_host([] {}); }), errc::update_violation,
                     "not a host callable");
  s.synchronize();
  REQUIRE(seen.size() == 3);
  CHECK(seen[2] == 8.0f);
  // So does an update of the wrong number of tasks, issued from another thread.
  m.execute(s);
  std::thread updater([&] {
    KEEL_REQUIRE_ERROR(fenced.update(u, group,
                                     [&](stream_ref us) {
                                       TestType::axpy(us, &out, &tmp, &other, 9.0f);
                                       TestType::axpy(us, &out, &tmp, &other, 9.0f);
                                     }),
                       errc::update_violation, "has 1 tasks and the update issued 2");
  });
  updater.join();
  s.synchronize();
  u.synchronize();
  REQUIRE(seen.size() == 4);
  CHECK(seen[3] == 8.0f);
}

KEEL_BACKEND_TEST("task_group: the split-model alternative re-captures only the changing part",
                  "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  // Instead of a group: three models around the changing task; the middle
  // one is captured again with the new alpha, the others are kept.
  stream s{dev};
  float out = 0, tmp = 1.0f, other = 1.0f, copied = 0;
  auto capture = [&](auto&& issue) {
    capture_scope scope{s};
    issue();
    return scope.end();
  };
  auto before = capture([&] { TestType::copy(s, &copied, &tmp); });
  auto middle = capture([&] { TestType::axpy(s, &out, &tmp, &other, 1.1f); });
  auto after = capture([&] { TestType::copy(s, &copied, &out); });
  auto run = [&] {
    before.execute(s);
    middle.execute(s);
    after.execute(s);
    s.synchronize();
    return copied;
  };
  CHECK(run() == Approx(2.1f));
  middle = capture([&] { TestType::axpy(s, &out, &tmp, &other, 5.5f); });
  CHECK(run() == Approx(6.5f));
}

KEEL_BACKEND_TEST("task_group: every fenced iteration sees the update issued for it", "[runtime][task_group]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, u{dev};
  concurrent_update fenced{dev};
  float out = 0, tmp = 0.0f, other = 1.0f;
  std::vector<float> seen;
  model m;
  task_group group;
  {
    capture_scope capture{s};
    fenced.fence(s);
    task_group_scope mark{s};
    TestType::axpy(s, &out, &tmp, &other, 0.0f);
    group = mark.end();
    s.launch_host([&] { seen.push_back(out); });
    m = capture.end();
  }
  constexpr int iterations = 30;
  for (int i = 1; i <= iterations; ++i) {
    m.execute(s);  // blocks at the fence until the update below is recorded
    fenced.update(u, group, [&](stream_ref us) { TestType::axpy(us, &out, &tmp, &other, static_cast<float>(i)); });
    // One signal per execution: the next update may be recorded only after
    // this execution has reset the event (see basic_concurrent_update).
    s.synchronize();
  }
  REQUIRE(seen.size() == iterations);
  for (int i = 1; i <= iterations; ++i) CHECK(seen[static_cast<std::size_t>(i - 1)] == static_cast<float>(i));
}
