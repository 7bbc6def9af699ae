// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support.hpp"

using keel::errc;
using keel_test::test_device;

namespace {

constexpr keel::kernel_kind axpy{"axpy"};
constexpr keel::kernel_kind copy_kernel{"copy"};

// out = tmp + alpha * other, one element: the add-with-alpha of the ops layer.
void axpy_kernel(keel::host::launch_context&, float* out, const float* tmp, const float* other, float alpha) {
  *out = *tmp + alpha * *other;
}
void copy_body(keel::host::launch_context&, float* dst, const float* src) { *dst = *src; }

struct fixture {
  keel::host::stream s{test_device()};
  keel::host::stream u{test_device()};
  float out = 0, tmp = 1.0f, other = 1.0f, copied = 0;
  keel::host::model model;
  keel::host::task_group group;

  // Captures: [copy] [group: axpy(alpha)] [copy].
  void capture(float alpha) {
    keel::host::capture_scope capture{s};
    s.launch(copy_kernel, &copy_body, &copied, &tmp);
    {
      keel::host::task_group_scope mark{s};
      s.launch(axpy, &axpy_kernel, &out, &tmp, &other, alpha);
      group = mark.end();
    }
    s.launch(copy_kernel, &copy_body, &copied, &out);
    model = capture.end();
  }
  float run() {
    model.execute(s);
    s.synchronize();
    return out;
  }
};

}  // namespace

TEST_CASE("task_group: RAII checklist, every field after moves", "[runtime][task_group]") {
  fixture f;
  f.capture(2.0f);
  auto* const native = f.group.get();
  CHECK(f.group.size() == 1);
  CHECK(f.group.model_alive());
  keel::host::task_group moved{std::move(f.group)};
  CHECK(moved.get() == native);
  CHECK(moved.size() == 1);
  CHECK_FALSE(f.group);
  KEEL_REQUIRE_ERROR(f.group.size(), errc::invalid_handle, "moved from");
  KEEL_REQUIRE_ERROR({ keel::host::update_scope attempt(f.u, f.group); }, errc::invalid_handle, "empty");
  f.group = std::move(moved);
  CHECK(f.group.get() == native);
  swap(f.group, moved);
  CHECK(moved.get() == native);
  auto view = keel::host::task_group_ref::adopt(moved.get());
  CHECK(view.size() == 1);
  auto* raw = moved.release();
  auto back = keel::host::task_group::adopt(raw);
  CHECK(back.get() == native);
  CHECK(f.model.group_count() == 1);
  CHECK(f.model.task_count() == 3);
}

TEST_CASE("task_group: a sequential update replaces the group's arguments", "[runtime][task_group]") {
  fixture f;
  f.capture(1.0f);
  CHECK(f.run() == 2.0f);
  {
    keel::host::update_scope update{f.u, f.group};
    CHECK(f.u.capture_status().updating);
    f.u.launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, 4.0f);
    CHECK(f.run() == 2.0f);  // not yet: the update ends later
    update.end();
  }
  f.u.synchronize();  // takes effect when the update stream reaches the end
  CHECK(f.run() == 5.0f);
  for (int i = 0; i < 20; ++i) CHECK(f.run() == 5.0f);
  CHECK(f.copied == 5.0f);
}

TEST_CASE("task_group: updates on a busy update stream keep stream order, also when adjacent ones merge",
          "[runtime][task_group]") {
  fixture f;
  f.capture(1.0f);
  CHECK(f.run() == 2.0f);
  keel::host::event gate{test_device(), keel::event_flags::external};
  f.u.wait(gate);  // the update stream is busy until the gate opens: every swap below is pending
  std::vector<float> seen;
  auto update = [&](float alpha) {
    keel::host::update_scope scope{f.u, f.group};
    f.u.launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, alpha);
    scope.end();
  };
  auto observe = [&] {
    f.model.execute(f.u);
    f.u.launch_host([&] { seen.push_back(f.out); });
  };
  update(3.0f);
  update(4.0f);  // adjacent to the pending swap of 3: takes its place
  observe();     // sees 4
  update(5.0f);  // after the execution: a swap of its own
  observe();     // sees 5
  update(6.0f);
  {
    keel::host::update_scope empty{f.u, f.group};  // no tasks: changes nothing, issues nothing
    empty.end();
  }
  update(7.0f);  // merges with 6
  observe();     // sees 7
  CHECK(f.run() == 2.0f);  // nothing took effect yet
  {
    keel::host::update_scope refused{f.u, f.group};  // a refused update leaves the pending swap alone
    f.u.launch(copy_kernel, &copy_body, &f.copied, &f.tmp);
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
  update(9.0f);
  CHECK(f.run() == 10.0f);
}

TEST_CASE("task_group: replacements must match the group in number and kind", "[runtime][task_group]") {
  fixture f;
  f.capture(1.0f);
  SECTION("too many") {
    keel::host::update_scope update{f.u, f.group};
    f.u.launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, 9.0f);
    f.u.launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, 9.0f);
    KEEL_REQUIRE_ERROR(update.end(), errc::update_violation, "has 1 tasks and the update issued 2");
  }
  SECTION("wrong kind") {
    keel::host::update_scope update{f.u, f.group};
    f.u.launch(copy_kernel, &copy_body, &f.out, &f.tmp);
    KEEL_REQUIRE_ERROR(update.end(), errc::update_violation, "is kernel 'axpy' and the update issued 'copy'");
  }
  SECTION("only operator launches") {
    keel::host::update_scope update{f.u, f.group};
    KEEL_REQUIRE_ERROR(f.u.launch_host([] {}), errc::update_violation, "not a host callable");
    int x = 0;
    KEEL_REQUIRE_ERROR(f.u.copy_async(&x, &x, sizeof x, keel::copy_kind::host_to_host), errc::update_violation,
                       "not a copy");
    keel::host::event e{test_device()};
    KEEL_REQUIRE_ERROR(e.record(f.u), errc::update_violation, "not an event operation");
    update.abandon();
  }
  SECTION("an update with no tasks leaves the group as it was") {
    keel::host::update_scope update{f.u, f.group};
    update.end();
  }
  SECTION("an exception abandons the update") {
    try {
      keel::host::update_scope update{f.u, f.group};
      f.u.launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, 9.0f);
      throw std::runtime_error("changed my mind");
    } catch (const std::runtime_error&) {
    }
    CHECK_FALSE(f.u.capture_status().updating);
  }
  f.u.synchronize();
  CHECK(f.run() == 2.0f);  // the model is unchanged in every case
  // and the group can be updated again afterwards
  keel::host::update_scope update{f.u, f.group};
  f.u.launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, 3.0f);
  update.end();
  f.u.synchronize();
  CHECK(f.run() == 4.0f);
}

TEST_CASE("task_group: only operator launches may be marked into a group", "[runtime][task_group]") {
  keel::host::stream s{test_device()};
  keel::host::event e{test_device()}, ext{test_device(), keel::event_flags::external};
  int x = 0;
  keel::host::capture_scope capture{s};
  keel::host::task_group_scope mark{s};
  KEEL_REQUIRE_ERROR(s.launch_host([] {}), errc::capture_violation, "not a host callable; stream #");
  KEEL_REQUIRE_ERROR(s.copy_async(&x, &x, sizeof x, keel::copy_kind::host_to_host), errc::capture_violation,
                     "task group open: yes");
  KEEL_REQUIRE_ERROR(e.record(s), errc::capture_violation, "not an event record");
  KEEL_REQUIRE_ERROR(s.wait(ext), errc::capture_violation, "not an event operation");
  KEEL_REQUIRE_ERROR({ keel::host::task_group_scope nested{s}; }, errc::capture_violation, "already marking");
  s.launch(axpy, [](keel::host::launch_context&) {});
  auto group = mark.end();
  CHECK(group.size() == 1);
  KEEL_REQUIRE_ERROR(mark.end(), errc::invalid_state, "already ended");
}

TEST_CASE("task_group: while a group is marked, no other capturing stream may issue work", "[runtime][task_group]") {
  keel::host::stream s{test_device()}, side{test_device()};
  keel::host::event fork{test_device()}, join{test_device()};
  keel::host::capture_scope capture{s};
  fork.record(s);
  side.wait(fork);
  {
    keel::host::task_group_scope mark{s};
    s.launch(axpy, [](keel::host::launch_context&) {});
    KEEL_REQUIRE_ERROR(side.launch(axpy, [](keel::host::launch_context&) {}), errc::capture_violation,
                       "no other capturing stream may issue work");
    KEEL_REQUIRE_ERROR(capture.end(), errc::capture_violation, "a task group is still open");
    (void)mark.end();
  }
  side.launch(axpy, [](keel::host::launch_context&) {});
  join.record(side);
  s.wait(join);
  auto model = capture.end();
  CHECK(model.group_count() == 1);
}

TEST_CASE("task_group: groups are marked during capture and updated on streams that are not capturing",
          "[runtime][task_group]") {
  fixture f;
  KEEL_REQUIRE_ERROR({ keel::host::task_group_scope mark{f.s}; }, errc::capture_violation, "is not capturing");
  f.capture(1.0f);
  keel::host::capture_scope capture{f.u};
  KEEL_REQUIRE_ERROR({ keel::host::update_scope attempt(f.u, f.group); }, errc::capture_violation,
                     "updates are issued on a stream that is not capturing");
}

TEST_CASE("task_group: one update of a group at a time; a second is an error, never a race",
          "[runtime][task_group]") {
  fixture f;
  f.capture(1.0f);
  keel::host::stream u2{test_device()};
  keel::host::update_scope first{f.u, f.group};
  std::string second;
  std::thread([&] { second = keel_test::error_of([&] { keel::host::update_scope again{u2, f.group}; }); }).join();
  CHECK(keel_test::contains(second, "is already being updated"));
  KEEL_REQUIRE_ERROR({ keel::host::update_scope attempt(f.u, f.group); }, errc::update_violation, "already updating");
  first.end();
  keel::host::update_scope third{u2, f.group};  // free again
  third.end();
}

TEST_CASE("task_group: updating a group whose model was destroyed is an error", "[runtime][task_group]") {
  fixture f;
  f.capture(1.0f);
  f.model.reset();
  CHECK_FALSE(f.group.model_alive());
  CHECK(f.group.size() == 1);  // the handle itself stays valid
  KEEL_REQUIRE_ERROR({ keel::host::update_scope attempt(f.u, f.group); }, errc::invalid_state, "was destroyed");
}

TEST_CASE("task_group: the model and the group handle may go while an update is open", "[runtime][task_group]") {
  // The updating stream holds the group through its claim alone: the group
  // outlives its last reference until the update ends, then goes (ASan and
  // TSan runs check that it goes exactly once).
  fixture f;
  f.capture(1.0f);
  SECTION("end refuses") {
    keel::host::update_scope update{f.u, f.group};
    f.u.launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, 3.0f);
    f.model.reset();
    f.group.reset();
    KEEL_REQUIRE_ERROR(update.end(), errc::invalid_state, "was destroyed");
  }
  SECTION("abandoned") {
    keel::host::update_scope update{f.u, f.group};
    f.u.launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, 3.0f);
    f.model.reset();
    f.group.reset();
    update.abandon();
  }
  SECTION("the update stream is destroyed") {
    // Through the backend: a scope must not outlive its stream, but a
    // stream destroyed mid-update abandons the update itself.
    auto side = std::make_unique<keel::host::stream>(test_device());
    keel::host::backend::update_begin(side->native_handle(), f.group.native_handle());
    side->launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, 3.0f);
    CHECK(side->capture_status().updating);
    f.model.reset();
    f.group.reset();
    side.reset();
  }
  SECTION("a swap still pending when they go") {
    keel::host::event gate{test_device(), keel::event_flags::external};
    f.u.wait(gate);  // busy: the update's swap is enqueued, and keeps the group alive
    {
      keel::host::update_scope update{f.u, f.group};
      f.u.launch(axpy, &axpy_kernel, &f.out, &f.tmp, &f.other, 3.0f);
      update.end();
    }
    f.model.reset();
    f.group.reset();
    gate.record(f.s);
    f.u.synchronize();
  }
  CHECK_FALSE(f.u.capture_status().updating);
}

TEST_CASE("task_group: a concurrent update through an external event takes effect in the running execution",
          "[runtime][task_group]") {
  keel::host::stream s{test_device()}, u{test_device()};
  keel::host::external_event_pool pool{test_device(), 1};
  keel::host::concurrent_update fenced{pool.acquire(u)};
  float out = 0, tmp = 1.0f, other = 1.0f;
  std::vector<float> seen;
  keel::host::model model;
  keel::host::task_group group;
  {
    keel::host::capture_scope capture{s};
    fenced.fence(s);  // wait for the update stream's signal, then reset it
    keel::host::task_group_scope mark{s};
    s.launch(axpy, &axpy_kernel, &out, &tmp, &other, 1.0f);
    group = mark.end();
    s.launch_host([&] { seen.push_back(out); });
    model = capture.end();
  }
  fenced.release(u);  // iteration 0 passes the fence unchanged
  model.execute(s);
  s.synchronize();
  model.execute(s);  // iteration 1 blocks at the fence until the update is recorded
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  CHECK(seen.size() == 1);
  fenced.update(u, group, [&](keel::host::stream_ref us) { us.launch(axpy, &axpy_kernel, &out, &tmp, &other, 7.0f); });
  s.synchronize();
  REQUIRE(seen.size() == 2);
  CHECK(seen[0] == 2.0f);
  CHECK(seen[1] == 8.0f);  // the iteration after the update sees it
  // A refused update still releases the fence: the execution runs the old group.
  model.execute(s);
  KEEL_REQUIRE_ERROR(fenced.update(u, group, [&](keel::host::stream_ref us) { us.launch_host([] {}); }),
                     errc::update_violation, "not a host callable");
  s.synchronize();
  REQUIRE(seen.size() == 3);
  CHECK(seen[2] == 8.0f);
}

TEST_CASE("task_group: the split-model alternative re-captures only the changing part", "[runtime][task_group]") {
  // Instead of a group: three models around the changing task; the middle
  // one is captured again with the new alpha, the others are kept.
  keel::host::stream s{test_device()};
  float out = 0, tmp = 1.0f, other = 1.0f, copied = 0;
  auto capture = [&](auto&& issue) {
    keel::host::capture_scope scope{s};
    issue();
    return scope.end();
  };
  auto before = capture([&] { s.launch(copy_kernel, &copy_body, &copied, &tmp); });
  auto middle = capture([&] { s.launch(axpy, &axpy_kernel, &out, &tmp, &other, 1.1f); });
  auto after = capture([&] { s.launch(copy_kernel, &copy_body, &copied, &out); });
  auto run = [&] {
    before.execute(s);
    middle.execute(s);
    after.execute(s);
    s.synchronize();
    return copied;
  };
  CHECK(run() == Approx(2.1f));
  middle = capture([&] { s.launch(axpy, &axpy_kernel, &out, &tmp, &other, 5.5f); });
  CHECK(run() == Approx(6.5f));
}

TEST_CASE("task_group: every fenced iteration sees the update issued for it", "[runtime][task_group]") {
  keel::host::stream s{test_device()}, u{test_device()};
  keel::host::concurrent_update fenced{test_device()};
  float out = 0, tmp = 0.0f, other = 1.0f;
  std::vector<float> seen;
  keel::host::model model;
  keel::host::task_group group;
  {
    keel::host::capture_scope capture{s};
    fenced.fence(s);
    keel::host::task_group_scope mark{s};
    s.launch(axpy, &axpy_kernel, &out, &tmp, &other, 0.0f);
    group = mark.end();
    s.launch_host([&] { seen.push_back(out); });
    model = capture.end();
  }
  constexpr int iterations = 30;
  for (int i = 1; i <= iterations; ++i) {
    model.execute(s);  // blocks at the fence until the update below is recorded
    fenced.update(u, group, [&](keel::host::stream_ref us) {
      us.launch(axpy, &axpy_kernel, &out, &tmp, &other, static_cast<float>(i));
    });
    // One signal per execution: the next update may be recorded only after
    // this execution has reset the event (see basic_concurrent_update).
    s.synchronize();
  }
  REQUIRE(seen.size() == iterations);
  for (int i = 1; i <= iterations; ++i) CHECK(seen[static_cast<std::size_t>(i - 1)] == static_cast<float>(i));
}
