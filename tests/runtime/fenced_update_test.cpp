// SPDX-License-Identifier: Apache-2.0
// Graph-owned updates: a fenced model applies its pending updates per step
// on an update stream; a signal with no issued execution to take it is
// refused, one for a later execution is ordered after the one before; a
// replacement needing more workspace than captured is refused with the
// sizes; one external event per fence (64 fences on a device's defaults,
// or loans of a pool); destroyed, failed captures and re-entry never hang;
// movable. Each rule is broken once, its error checked, and the model shown
// to execute with its old parameters. Host and ACL (" - host" / " - acl").
#include <catch2/catch.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "keel/runtime/fenced_update.hpp"
#include "test_support.hpp"

using keel::errc;

namespace {

// out = tmp + alpha * other in one fenced group, then a host task that notes out.
template <class F>
struct fenced {
  typename F::stream s{F::device()}, u{F::device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  std::vector<float> seen;
  keel::basic_fenced_model<typename F::backend> fm{F::device()};
  fenced() {
    typename F::capture_scope capture{s};
    fm.fenced_update(s, 64, [&](typename F::stream_ref c) { F::axpy(c, &out, &tmp, &other, 1.0f); });
    s.launch_host([this] { seen.push_back(out); });
    fm.adopt(capture.end());
  }
  void stage(float alpha, std::size_t workspace = 64) {
    fm.stage(0, workspace, [this, alpha](typename F::stream_ref us) { F::axpy(us, &out, &tmp, &other, alpha); });
  }
};

}  // namespace

KEEL_BACKEND_TEST("fenced model: each step's apply() issues its pending updates and the execution sees them",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  CHECK(f.fm.fence_count() == 1);
  for (int i = 1; i <= 5; ++i) {
    f.fm.execute(f.s);  // waits at the fence for apply()
    f.stage(static_cast<float>(i));
    f.fm.apply(f.u);
    f.s.synchronize();
  }
  CHECK(f.seen == std::vector<float>{2.0f, 3.0f, 4.0f, 5.0f, 6.0f});
}

KEEL_BACKEND_TEST("fenced model: a step's apply() after the next execution was issued is ordered after it (no synchronize)",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  for (int i = 1; i <= 6; ++i) {
    f.fm.execute(f.s);
    f.stage(static_cast<float>(i));
    f.fm.apply(f.u);  // the second signal waits for the first execution's pass, never merges
  }
  f.s.synchronize();
  f.u.synchronize();
  CHECK(f.seen == std::vector<float>{2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f});
}

KEEL_BACKEND_TEST("fenced model: a signal before its execution was issued is refused, nothing is issued",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.stage(3.0f);
  KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::invalid_state, "every issued execution has its signal");
  f.fm.execute(f.s);
  f.fm.apply(f.u);  // the staged alpha 3 was kept for this apply
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f});
}

KEEL_BACKEND_TEST("fenced model: a second apply() without an execute() is refused, no update lands late",
                  "[runtime][fenced_update]") {
  // Accepted, the second signal would run ahead of its execution and every
  // later step's update would land one execution late.
  fenced<TestType> f;
  f.fm.execute(f.s);
  f.stage(3.0f);
  f.fm.apply(f.u);
  f.stage(9.0f);
  KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::invalid_state, "would be lost");
  for (int i = 5; i <= 6; ++i) {
    f.fm.execute(f.s);
    f.stage(static_cast<float>(i));  // replaces the refused step's alpha 9
    f.fm.apply(f.u);
  }
  f.s.synchronize();
  f.u.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f, 6.0f, 7.0f});
}

KEEL_BACKEND_TEST("fenced model: executions issued ahead take the applies in order",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.fm.execute(f.s);
  f.fm.execute(f.s);
  f.stage(3.0f);
  f.fm.apply(f.u);  // for the first execution
  f.stage(5.0f);
  f.fm.apply(f.u);  // for the second, ordered after the first's end
  KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::invalid_state, "2 executions, 2 signals");
  f.s.synchronize();
  f.u.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f, 6.0f});
}

KEEL_BACKEND_TEST("fenced model: executions on alternating streams each take their own step's update",
                  "[runtime][fenced_update]") {
  // Unordered, the later execution could reach the fence first and take
  // the earlier one's signal, which would then wait forever.
  fenced<TestType> f;
  typename TestType::stream s2{TestType::device()};
  std::vector<float> expected;
  for (int i = 1; i <= 12; ++i) {
    f.fm.execute(i % 2 ? f.s : s2);
    f.stage(static_cast<float>(i));
    f.fm.apply(f.u);
    expected.push_back(1.0f + static_cast<float>(i));
  }
  f.s.synchronize(std::chrono::seconds(10));
  s2.synchronize(std::chrono::seconds(10));
  CHECK(f.seen == expected);
}

KEEL_BACKEND_TEST("fenced model: apply() on the stream its execution waits on is refused, not left to hang",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.fm.execute(f.s);
  f.stage(3.0f);
  KEEL_REQUIRE_ERROR(f.fm.apply(f.s), errc::invalid_parameter, "would queue behind it");
  f.fm.apply(f.u);  // the staged alpha 3 was kept
  f.s.synchronize(std::chrono::seconds(10));
  CHECK(f.seen == std::vector<float>{4.0f});
}

KEEL_BACKEND_TEST("fenced model: a replacement needing more workspace than captured is refused with both sizes",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  KEEL_REQUIRE_ERROR(f.stage(5.0f, 128), errc::resource_limit, "needs 128 bytes of workspace");
  KEEL_REQUIRE_ERROR(f.stage(5.0f, 128), errc::resource_limit, "captured with 64 bytes");
  KEEL_REQUIRE_ERROR(f.fm.stage(3, 0, [](typename TestType::stream_ref) {}), errc::invalid_parameter,
                     "fence 3 does not exist");
  f.fm.execute(f.s);
  f.fm.apply(f.u);  // nothing pending: the group runs as captured
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{2.0f});
}

KEEL_BACKEND_TEST("fenced model: a refused update still signals its fence, the execution runs the unchanged group",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.fm.execute(f.s);
  f.fm.stage(0, 0, [&](typename TestType::stream_ref us) {
    TestType::axpy(us, &f.out, &f.tmp, &f.other, 5.0f);
    TestType::axpy(us, &f.out, &f.tmp, &f.other, 5.0f);
  });
  KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::update_violation, "has 1 tasks and the update issued 2");
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{2.0f});
}

KEEL_BACKEND_TEST("fenced model: apply() on a capturing update stream is refused, nothing is issued or counted",
                  "[runtime][fenced_update]") {
  // The fences' signals would go into that capture while apply() counted
  // them: the next execution would wait forever.
  fenced<TestType> f;
  f.stage(3.0f);
  {
    typename TestType::capture_scope capture{f.u};
    KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::capture_violation, "keel::fenced_model::apply");
    KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::capture_violation, "is capturing");
    capture.cancel();
  }
  f.fm.execute(f.s);
  f.fm.apply(f.u);  // the staged alpha 3 was kept; this is the first signal
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f});
}

KEEL_BACKEND_TEST("fenced model: apply() on an empty update stream is refused before the staged updates are touched",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.stage(3.0f);
  f.fm.execute(f.s);
  KEEL_REQUIRE_ERROR(f.fm.apply(typename TestType::stream_ref{}), errc::invalid_handle, "keel::fenced_model::apply");
  f.fm.apply(f.u);  // the staged alpha 3 was kept; the refusal counted no signal
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f});
}

namespace {

// A device with the backend's default limits (64 external events): the
// host's default device; the ACL emulation's device (it has the defaults).
template <class F>
auto& default_limits_device() {
  if constexpr (F::is_host)
    return keel::host::default_device();
  else
    return F::device();
}

// fences groups, each out[i] = tmp + alpha * other, run through fm for a few steps.
template <class F, class Fenced>
void run_many_fences(Fenced& fm, typename F::stream_ref s, typename F::stream_ref u, std::size_t fences) {
  std::vector<float> out(fences, 0.0f);
  const float tmp = 1.0f, other = 1.0f;
  {
    typename F::capture_scope capture{s};
    for (std::size_t i = 0; i < fences; ++i)
      CHECK(fm.fenced_update(s, 0, [&](typename F::stream_ref c) { F::axpy(c, &out[i], &tmp, &other, 1.0f); }) == i);
    fm.adopt(capture.end());
  }
  REQUIRE(fm.fence_count() == fences);
  for (int step = 1; step <= 3; ++step) {
    fm.execute(s);
    for (std::size_t i = 0; i < fences; i += 7)
      fm.stage(i, 0, [&, i, step](typename F::stream_ref us) {
        F::axpy(us, &out[i], &tmp, &other, static_cast<float>(step * 100 + static_cast<int>(i)));
      });
    fm.apply(u);
  }
  s.synchronize();
  u.synchronize();
  for (std::size_t i = 0; i < fences; ++i)
    CHECK(out[i] == (i % 7 == 0 ? 1.0f + static_cast<float>(300 + static_cast<int>(i)) : 2.0f));
}

}  // namespace

KEEL_BACKEND_TEST("fenced model: 64 fences on a device's default limits, one external event each",
                  "[runtime][fenced_update]") {
  auto& dev = default_limits_device<TestType>();
  typename TestType::stream s{dev}, u{dev};
  keel::basic_fenced_model<typename TestType::backend> fm{dev};
  run_many_fences<TestType>(fm, s, u, 64);
}

KEEL_BACKEND_TEST("fenced model: fences drawn from an external_event_pool go back to it with the fenced model",
                  "[runtime][fenced_update]") {
  auto& dev = default_limits_device<TestType>();
  typename TestType::stream s{dev}, u{dev};
  typename TestType::external_event_pool pool{dev, 64};
  for (int round = 0; round < 2; ++round) {  // the second fenced model reuses the first one's loans
    keel::basic_fenced_model<typename TestType::backend> fm{dev, pool, u};
    run_many_fences<TestType>(fm, s, u, 64);
    CHECK(pool.idle() == 0);
  }
  CHECK(pool.idle() == 64);
  CHECK(pool.size() == 64);
  keel::basic_fenced_model<typename TestType::backend> fm{dev, pool, u};
  {
    typename TestType::capture_scope capture{u};  // the pool's reset stream may not be capturing
    float x = 0;
    KEEL_REQUIRE_ERROR(fm.fenced_update(u, 0, [&](typename TestType::stream_ref c) { TestType::axpy(c, &x, &x, &x, 1.0f); }),
                       errc::capture_violation, "reset stream");
    capture.cancel();
  }
}

KEEL_BACKEND_TEST("fenced model: destroyed while executions wait at its fences, it signals them, nothing hangs",
                  "[runtime][fenced_update]") {
  typename TestType::stream s{TestType::device()}, u{TestType::device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  std::vector<float> seen;
  {
    keel::basic_fenced_model<typename TestType::backend> fm{TestType::device()};
    {
      typename TestType::capture_scope capture{s};
      fm.fenced_update(s, 0, [&](typename TestType::stream_ref c) { TestType::axpy(c, &out, &tmp, &other, 1.0f); });
      s.launch_host([&] { seen.push_back(out); });
      fm.adopt(capture.end());
    }
    fm.execute(s);
    fm.stage(0, 0, [&](typename TestType::stream_ref us) { TestType::axpy(us, &out, &tmp, &other, 4.0f); });
    fm.apply(u);
    fm.execute(s);  // an exception between execute() and apply(): these two wait at the fence
    fm.execute(s);
  }
  s.synchronize(std::chrono::seconds(10));  // the unsignalled executions ran their groups unchanged
  CHECK(seen == std::vector<float>{5.0f, 5.0f, 5.0f});
}

KEEL_BACKEND_TEST("fenced model: fences of a capture that failed are dropped by the next capture's fenced_update",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;  // a fenced model that adopted: made again below without it
  keel::basic_fenced_model<typename TestType::backend> fm{TestType::device()};
  float out = 0.0f;
  try {
    typename TestType::capture_scope capture{f.s};
    fm.fenced_update(f.s, 0, [&](typename TestType::stream_ref c) { TestType::axpy(c, &out, &f.tmp, &f.other, 1.0f); });
    throw std::runtime_error("the capture failed");
  } catch (const std::runtime_error&) {
  }
  CHECK(fm.fence_count() == 1);
  typename TestType::model m;
  {
    typename TestType::capture_scope capture{f.s};
    fm.fenced_update(f.s, 0, [&](typename TestType::stream_ref c) { TestType::axpy(c, &out, &f.tmp, &f.other, 2.0f); });
    CHECK(fm.fence_count() == 1);  // the dead fence is gone: no apply() waits for it
    m = capture.end();
  }
  typename TestType::model other_capture;
  {
    typename TestType::capture_scope capture{f.s};
    TestType::axpy(f.s, &out, &f.tmp, &f.other, 1.0f);
    other_capture = capture.end();
  }
  KEEL_REQUIRE_ERROR(fm.adopt(std::move(other_capture)), errc::invalid_parameter, "is not the capture");
  fm.adopt(std::move(m));
  for (int i = 0; i < 3; ++i) {
    fm.execute(f.s);
    fm.apply(f.u);
  }
  f.s.synchronize(std::chrono::seconds(10));
  f.u.synchronize(std::chrono::seconds(10));
  CHECK(out == 3.0f);
  KEEL_REQUIRE_ERROR(fm.fenced_update(f.s, 0, [](typename TestType::stream_ref) {}), errc::capture_violation,
                     "is not capturing");
  {
    typename TestType::capture_scope capture{f.s};
    KEEL_REQUIRE_ERROR(fm.fenced_update(f.s, 0, [](typename TestType::stream_ref) {}), errc::invalid_state,
                       "owns a model already");
    capture.cancel();
  }
  f.s.synchronize(std::chrono::seconds(10));
}

KEEL_BACKEND_TEST("fenced model: an issue function that calls back into its fenced model is refused, not deadlocked",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.fm.execute(f.s);
  f.fm.stage(0, 0, [&](typename TestType::stream_ref us) {
    TestType::axpy(us, &f.out, &f.tmp, &f.other, 5.0f);
    (void)f.fm.fence_count();
  });
  KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::invalid_state, "called from an issue function that apply() is running");
  f.s.synchronize(std::chrono::seconds(10));
  CHECK(f.seen == std::vector<float>{2.0f});  // the fence was signalled, the group unchanged
  CHECK(f.fm.fence_count() == 1);             // and the fenced model is usable
}

KEEL_BACKEND_TEST("fenced model: movable, a moved-from one refuses every call and destroys nothing",
                  "[runtime][fenced_update]") {
  fenced<TestType> f;
  f.fm.execute(f.s);
  keel::basic_fenced_model<typename TestType::backend> moved{std::move(f.fm)};
  KEEL_REQUIRE_ERROR(f.stage(3.0f), errc::invalid_handle, "moved from");
  CHECK_FALSE(f.fm.model());
  KEEL_REQUIRE_ERROR(f.fm.apply(f.u), errc::invalid_handle, "moved from");
  KEEL_REQUIRE_ERROR(f.fm.execute(f.s), errc::invalid_handle, "moved from");
  KEEL_REQUIRE_ERROR((void)f.fm.fence_count(), errc::invalid_handle, "moved from");
  moved.stage(0, 0, [&](typename TestType::stream_ref us) { TestType::axpy(us, &f.out, &f.tmp, &f.other, 3.0f); });
  moved.apply(f.u);  // the execution issued before the move takes it
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f});
  std::vector<keel::basic_fenced_model<typename TestType::backend>> runners;
  runners.push_back(std::move(moved));
  runners.front().execute(f.s);
  f.fm = std::move(runners.front());  // assigning to the moved-from one
  f.fm.apply(f.u);
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{4.0f, 4.0f});
}

namespace {

// out = tmp + alpha * other in a task group behind a concurrent update's
// fence, then a host task that notes out.
template <class F>
struct concurrent {
  typename F::stream s{F::device()}, u{F::device()};
  float tmp = 1.0f, other = 1.0f, out = 0.0f;
  std::vector<float> seen;
  typename F::concurrent_update fenced;
  typename F::task_group group;
  typename F::model m;
  explicit concurrent(std::chrono::milliseconds limit = std::chrono::milliseconds(10000))
      : fenced(F::device(), limit) {
    typename F::capture_scope capture{s};
    fenced.fence(s);
    typename F::task_group_scope mark{s};
    F::axpy(s, &out, &tmp, &other, 1.0f);
    group = mark.end();
    s.launch_host([this] { seen.push_back(out); });
    m = capture.end();
  }
  void update(float alpha) {
    fenced.update(u, group, [this, alpha](typename F::stream_ref us) { F::axpy(us, &out, &tmp, &other, alpha); });
  }
};

}  // namespace

KEEL_BACKEND_TEST("concurrent update: replay then update every step with no wait runs each update in its execution",
                  "[runtime][task_group][concurrent_update]") {
  // The order of runners that replay, then update on the update stream
  // with nothing between: each update waits for the previous execution to
  // pass the fence; recorded at once, a signal would be merged into the
  // previous one and an execution would wait forever (and, the stream's
  // queue full, the next enqueue with it).
  concurrent<TestType> f;
  for (int i = 1; i <= 20; ++i) {
    f.m.execute(f.s);  // waits at the fence for the update below
    f.update(static_cast<float>(i));
  }
  f.s.synchronize(std::chrono::seconds(10));
  REQUIRE(f.seen.size() == 20);
  // Each update lands in its execution, or (the documented window: its
  // commit ran while the previous execution was between its fence and its
  // group) in the one before; never later, never lost.
  for (std::size_t i = 1; i <= 20; ++i) {
    const float own = 1.0f + static_cast<float>(i);
    CHECK((f.seen[i - 1] == own || (i < 20 && f.seen[i - 1] == own + 1.0f)));
  }
  CHECK(f.seen.back() == 21.0f);
}

KEEL_BACKEND_TEST("concurrent update: a second signal no execution consumes is refused after the limit, nothing changes",
                  "[runtime][task_group][concurrent_update]") {
  concurrent<TestType> f{std::chrono::milliseconds(100)};
  f.fenced.release(f.u);  // for the first execution, not issued yet
  KEEL_REQUIRE_ERROR(f.fenced.release(f.u), errc::timeout, "keel::concurrent_update::release");
  KEEL_REQUIRE_ERROR(f.update(5.0f), errc::timeout, "would be merged into the first");
  CHECK_FALSE(f.u.capture_status().updating);  // no update was begun
  f.m.execute(f.s);
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{2.0f});  // the refused update changed nothing
  f.m.execute(f.s);
  f.update(5.0f);  // the signal was consumed: this one is the next execution's
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{2.0f, 6.0f});
  // An execution held up before the fence: the update is refused, not left to hang.
  typename TestType::event gate{TestType::device(), keel::event_flags::external};
  f.s.wait(gate);
  f.m.execute(f.s);
  f.update(3.0f);
  f.m.execute(f.s);
  KEEL_REQUIRE_ERROR(f.update(7.0f), errc::timeout, "update stream #");
  gate.record(f.u);
  f.update(7.0f);  // waits for the first execution to pass the fence
  f.s.synchronize(std::chrono::seconds(10));
  // The third execution runs alpha 3, or alpha 7 when the last update's
  // commit fell in the documented window between its fence and its group.
  const bool in_its_execution = f.seen == std::vector<float>{2.0f, 6.0f, 4.0f, 8.0f};
  const bool one_early = f.seen == std::vector<float>{2.0f, 6.0f, 8.0f, 8.0f};
  CHECK((in_its_execution || one_early));
}

KEEL_BACKEND_TEST("concurrent update: movable, a moved-from one has no event and refuses every call",
                  "[runtime][task_group][concurrent_update]") {
  concurrent<TestType> f;
  typename TestType::concurrent_update moved{std::move(f.fenced)};
  CHECK_FALSE(f.fenced.event());
  KEEL_REQUIRE_ERROR(f.fenced.release(f.u), errc::invalid_handle, "keel::concurrent_update::release");
  KEEL_REQUIRE_ERROR(f.update(3.0f), errc::invalid_handle, "moved from");
  moved.release(f.u);
  f.m.execute(f.s);
  f.s.synchronize();
  f.fenced = std::move(moved);  // back, by assignment
  f.m.execute(f.s);
  f.update(3.0f);
  f.s.synchronize();
  CHECK(f.seen == std::vector<float>{2.0f, 4.0f});
}
