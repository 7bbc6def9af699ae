// SPDX-License-Identifier: Apache-2.0
// Conditional tasks (keel/runtime/condition.hpp): the
// condition is read when the task runs, IF / WHILE / SWITCH choose their
// bodies by it, bodies nest and live as long as their parent, and every rule
// is checked with the objects left usable. Each test runs on the host and
// the ACL backend; the last one calls the emulation's C API for CANN's statuses.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "keel/runtime/model_dump.hpp"
#include "test_support.hpp"

using keel::conditional_kind;
using keel::errc;

namespace {

// Adds d to a condition's value in stream order: a host callable on the
// host, an int64 aclnnAdd on ACL (a device value written by device work).
template <class F>
struct condition_ops;
template <>
struct condition_ops<host> {
  static void add(host::stream_ref s, std::uint64_t* v, std::int64_t d) {
    s.launch_host([v, d] { *v = static_cast<std::uint64_t>(static_cast<std::int64_t>(*v) + d); });
  }
};
#ifdef KEEL_ACL_EMULATION_DIR
template <>
struct condition_ops<acl> {
  static void add(acl::stream_ref s, std::uint64_t* v, std::int64_t d) {
    static const std::int64_t one = 1;
    const keel::ops::tensor t(v, keel::ops::dtype::int64, {1});
    const keel::ops::tensor u(const_cast<std::int64_t*>(&one), keel::ops::dtype::int64, {1});
    keel::acl::run_on(s, keel::acl::prepare_add(acl::device(), t, u, keel::ops::scalar(d), t));
  }
};
#endif

// counter += 1, as a kernel of the fixture.
template <class F>
void bump(typename F::stream_ref s, float* counter) {
  static const float one = 1.0f;
  F::axpy(s, counter, counter, &one, 1.0f);
}

}  // namespace

KEEL_BACKEND_TEST("conditional: IF runs its then body when the condition is not 0 and its else body when it is 0",
                  "[runtime][conditional]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev}, side{dev};
  float then_runs = 0.0f, else_runs = 0.0f;
  std::uint64_t* value = nullptr;
  model m;
  {
    capture_scope capture{s};
    auto c = keel::make_condition<B>(s, 1, false);  // the program manages the value
    value = c.value();
    REQUIRE(value != nullptr);
    CHECK(*value == 1);
    auto bodies = keel::if_else<B>(s, c);
    {
      keel::basic_body_capture_scope<B> into{side, bodies.first};
      bump<TestType>(side, &then_runs);
      into.end();
    }
    {
      keel::basic_body_capture_scope<B> into{side, bodies.second};
      bump<TestType>(side, &else_runs);
      into.end();
    }
    m = capture.end();
  }
  CHECK(m.task_count() == 1);
  {
    // tasks() lists the conditional with its bodies (CANN's aclmdlRITaskType
    // has no type for it: on ACL keel's books name it).
    const std::vector<keel::task_info> listed = m.tasks();
    REQUIRE(listed.size() == 1);
    CHECK(listed[0].type == keel::task_type::conditional);
    CHECK(listed[0].conditional == "if");
    CHECK(listed[0].bodies.size() == 2);
  }
  m.execute(s);
  s.synchronize();
  CHECK(then_runs == 1.0f);
  CHECK(else_runs == 0.0f);
  *value = 0;  // read when the task runs
  m.execute(s);
  s.synchronize();
  CHECK(then_runs == 1.0f);
  CHECK(else_runs == 1.0f);
}

KEEL_BACKEND_TEST("conditional: a WHILE body that keeps its condition true runs again, and assign-default restarts it",
                  "[runtime][conditional]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev}, side{dev};
  float runs = 0.0f;
  std::uint64_t* value = nullptr;
  model m;
  {
    capture_scope capture{s};
    auto c = keel::make_condition<B>(s, 3);  // reset to 3 at every execution
    value = c.value();
    auto body = keel::while_<B>(s, c);
    {
      keel::basic_body_capture_scope<B> into{side, body};
      bump<TestType>(side, &runs);
      condition_ops<TestType>::add(side, value, -1);
      into.end();
    }
    m = capture.end();
  }
  m.execute(s);
  s.synchronize();
  CHECK(runs == 3.0f);
  CHECK(*value == 0);
  m.execute(s);
  s.synchronize();
  CHECK(runs == 6.0f);
}

KEEL_BACKEND_TEST("conditional: SWITCH runs the body its value names, and none past the last",
                  "[runtime][conditional]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev}, side{dev};
  float runs[3] = {0, 0, 0};
  std::uint64_t* value = nullptr;
  model m;
  {
    capture_scope capture{s};
    auto c = keel::make_condition<B>(s, 0, false);
    value = c.value();
    auto bodies = keel::switch_<B>(s, c, 3);
    REQUIRE(bodies.size() == 3);
    for (int i = 0; i < 3; ++i) {
      keel::basic_body_capture_scope<B> into{side, bodies[i]};
      bump<TestType>(side, &runs[i]);
      into.end();
    }
    m = capture.end();
  }
  const std::vector<keel::task_info> listed = m.tasks();  // the task, its kind and each case's body
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].type == keel::task_type::conditional);
  CHECK(listed[0].conditional == "switch");
  REQUIRE(listed[0].bodies.size() == 3);
  for (const keel::conditional_body& b : listed[0].bodies) CHECK(b.tasks.size() == 1);
  CHECK_THAT(keel::to_json(m), Catch::Contains("\"name\": \"case 2\""));
  for (std::uint64_t v : {2u, 0u, 1u, 3u, 7u}) {
    *value = v;
    m.execute(s);
    s.synchronize();
  }
  CHECK(runs[0] == 1.0f);
  CHECK(runs[1] == 1.0f);
  CHECK(runs[2] == 1.0f);  // 3 and 7 ran nothing
}

KEEL_BACKEND_TEST("conditional: conditionals nest, and the bodies live as long as the parent model",
                  "[runtime][conditional]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev}, side{dev}, inner_side{dev};
  float runs = 0.0f;
  model m;
  {
    capture_scope capture{s};
    auto outer = keel::make_condition<B>(s, 1);
    auto then_body = keel::if_<B>(s, outer);
    {
      keel::basic_body_capture_scope<B> into{side, then_body};
      auto loop = keel::make_condition<B>(side, 2);  // belongs to the body, reset at each of its runs
      auto body = keel::while_<B>(side, loop);
      {
        keel::basic_body_capture_scope<B> inner{inner_side, body};
        bump<TestType>(inner_side, &runs);
        condition_ops<TestType>::add(inner_side, loop.value(), -1);
        inner.end();
      }
      into.end();
    }
    m = capture.end();
  }  // every scope, condition and body view is gone: the model holds them
  model moved = std::move(m);
  moved.execute(s);
  moved.execute(s);
  s.synchronize();
  CHECK(runs == 4.0f);
}

// Waits until @p count reaches @p at least (the loop below runs on a
// stream's worker): false after ten seconds.
bool reaches(const std::atomic<int>& count, int at_least) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (count.load() < at_least)
    if (std::chrono::steady_clock::now() > deadline) return false;
  return true;
}

KEEL_BACKEND_TEST("conditional: abort() stops a running WHILE loop nested in an IF whose condition is never cleared",
                  "[runtime][conditional][abort]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev}, side{dev}, inner_side{dev};
  std::atomic<int> iterations{0};
  std::uint64_t* loop_value = nullptr;
  model m;
  {
    capture_scope capture{s};
    auto outer = keel::make_condition<B>(s, 1);
    auto then_body = keel::if_<B>(s, outer);
    {
      keel::basic_body_capture_scope<B> into{side, then_body};
      auto loop = keel::make_condition<B>(side, 1, false);  // nothing in the loop clears it
      loop_value = loop.value();
      auto body = keel::while_<B>(side, loop);
      {
        keel::basic_body_capture_scope<B> inner{inner_side, body};
        inner_side.launch_host([&iterations] { ++iterations; });
        inner.end();
      }
      into.end();
    }
    m = capture.end();
  }
  m.execute(s);
  REQUIRE(reaches(iterations, 3));
  m.abort();  // reaches the loop two bodies down, between or inside its body's runs
  KEEL_REQUIRE_ERROR(s.synchronize(std::chrono::seconds(10)), errc::task_failed, "aborted");
  const int stopped_at = iterations.load();
  *loop_value = 0;  // the stream and the model stay usable: the loop now ends at once
  m.execute(s);
  s.synchronize(std::chrono::seconds(10));
  CHECK(iterations.load() == stopped_at);
}

// A WHILE body of two host functions: the first counts its runs and throws
// on the second, the second clears the condition from the third run on.
template <class TestType, class Stream, class Model>
void capture_failing_loop(Stream& s, Stream& side, Model& m, std::atomic<int>& runs) {
  using B = typename TestType::backend;
  typename TestType::capture_scope capture{s};
  auto c = keel::make_condition<B>(s, 1, false);
  std::uint64_t* value = c.value();
  auto body = keel::while_<B>(s, c);
  {
    keel::basic_body_capture_scope<B> into{side, body};
    side.launch_host([&runs] {
      if (++runs == 2) throw std::runtime_error("the body's host function failed");
    });
    side.launch_host([&runs, value] {
      if (runs.load() >= 3) *value = 0;
    });
    into.end();
  }
  m = capture.end();
}

KEEL_BACKEND_TEST("conditional: a WHILE body whose host function throws ends its loop, and its stream reports task_failed",
                  "[runtime][conditional]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, side{dev};
  std::atomic<int> runs{0};
  model m;
  capture_failing_loop<TestType>(s, side, m, runs);
  m.execute(s);
  KEEL_REQUIRE_ERROR(s.synchronize(std::chrono::seconds(10)), errc::task_failed, "the body's host function failed");
  CHECK(runs.load() == 2);  // the loop ended at the failure
  m.execute(s);             // the stream and the model stay usable: the third run clears the condition
  s.synchronize(std::chrono::seconds(10));
  CHECK(runs.load() == 3);
}

KEEL_BACKEND_TEST("conditional: a body is never adopted: model::from_native_handle refuses it and the parent still runs",
                  "[runtime][conditional][rules]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev}, side{dev};
  float runs = 0.0f;
  keel::basic_model_ref<B> body;
  model m;
  {
    capture_scope capture{s};
    auto c = keel::make_condition<B>(s, 1);
    body = keel::if_<B>(s, c);
    {
      keel::basic_body_capture_scope<B> into{side, body};
      bump<TestType>(side, &runs);
      into.end();
    }
    m = capture.end();
  }
  KEEL_REQUIRE_ERROR((void)model::from_native_handle(dev, body.native_handle()), errc::invalid_handle,
                     "never adopted");
  body.execute(s);  // a body may be executed directly: its work runs once, the condition unread
  s.synchronize();
  CHECK(runs == 1.0f);
  runs = 0.0f;
  m.execute(s);
  s.synchronize();
  CHECK(runs == 1.0f);
  m.reset();  // the parent destroys the body, once
}

KEEL_BACKEND_TEST("conditional: conditions and conditional tasks are made on a capturing stream, with a condition of its own model",
                  "[runtime][conditional][rules]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev}, other{dev}, side{dev};
  KEEL_REQUIRE_ERROR(keel::make_condition<B>(s, 0), errc::capture_violation, "is not capturing");
  float runs = 0.0f;
  capture_scope foreign{other};
  auto theirs = keel::make_condition<B>(other, 1);
  model m;
  {
    capture_scope capture{s};
    auto mine = keel::make_condition<B>(s, 1);
    KEEL_REQUIRE_ERROR(keel::if_<B>(s, theirs), errc::invalid_parameter, "belongs to another model");
    KEEL_REQUIRE_ERROR(keel::if_<B>(side, mine), errc::capture_violation, "is not capturing");
    KEEL_REQUIRE_ERROR(keel::switch_<B>(s, mine, 0), errc::invalid_parameter, "at least 1 branch");
    KEEL_REQUIRE_ERROR(keel::switch_<B>(s, mine, static_cast<std::size_t>(-1)), errc::invalid_parameter,
                       "at most 65536 branches");  // refused before anything is allocated
    KEEL_REQUIRE_ERROR(keel::switch_<B>(s, mine, keel::max_conditional_branches + 1), errc::invalid_parameter,
                       "at most 65536 branches");
    KEEL_REQUIRE_ERROR(keel::add_conditional<B>(s, mine, conditional_kind::if_, 3), errc::invalid_parameter,
                       "1 branch (then) or 2");
    KEEL_REQUIRE_ERROR(keel::add_conditional<B>(s, mine, conditional_kind::while_, 2), errc::invalid_parameter,
                       "1 body");
    KEEL_REQUIRE_ERROR(keel::add_conditional<B>(s, mine, static_cast<conditional_kind>(7), 1),
                       errc::invalid_parameter, "unknown conditional kind");
    auto body = keel::if_<B>(s, mine);  // unchanged and usable
    {
      keel::basic_body_capture_scope<B> into{side, body};
      bump<TestType>(side, &runs);
      into.end();
    }
    m = capture.end();
  }
  foreign.cancel();
  CHECK(m.task_count() == 1);  // the refused tasks left nothing
  m.execute(s);
  s.synchronize();
  CHECK(runs == 1.0f);
}

KEEL_BACKEND_TEST("conditional: a body is captured once, while its parent's capture is in progress",
                  "[runtime][conditional][rules]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream s{dev}, side{dev}, plain{dev};
  float tmp = 1.0f, one = 1.0f, out = 0.0f;
  model captured;
  {
    capture_scope capture{plain};
    TestType::axpy(plain, &out, &tmp, &one, 1.0f);
    captured = capture.end();
  }
  keel::basic_model_ref<B> body;
  model m;
  {
    capture_scope capture{s};
    auto c = keel::make_condition<B>(s, 1);
    body = keel::if_<B>(s, c);
    KEEL_REQUIRE_ERROR(([&] { keel::basic_body_capture_scope<B> refused{side, captured.ref()}; }()), errc::invalid_parameter,
                       "only a conditional body");
    KEEL_REQUIRE_ERROR(([&] { keel::basic_body_capture_scope<B> refused{s, body}; }()), errc::capture_violation, "capture cannot begin");
    {
      keel::basic_body_capture_scope<B> into{side, body};
      TestType::axpy(side, &out, &tmp, &one, 2.0f);
      into.end();
      KEEL_REQUIRE_ERROR(into.end(), errc::invalid_state, "already ended");
    }
    KEEL_REQUIRE_ERROR(([&] { keel::basic_body_capture_scope<B> refused{side, body}; }()), errc::invalid_state, "captured already");
    m = capture.end();
  }
  {
    // The model holds the body (a discarded capture would take it along: its view would dangle).
    capture_scope late{s};
    auto c = keel::make_condition<B>(s, 1);
    auto orphan = keel::if_<B>(s, c);
    model late_model = late.end();
    KEEL_REQUIRE_ERROR(([&] { keel::basic_body_capture_scope<B> refused{side, orphan}; }()), errc::invalid_state, "parent capture");
  }
  m.execute(s);
  s.synchronize();
  CHECK(out == 3.0f);
  TestType::axpy(side, &out, &tmp, &one, 1.0f);  // the side stream is not capturing any more
  side.synchronize();
  CHECK(out == 2.0f);
}

#ifdef KEEL_ACL_EMULATION_DIR
// CANN's statuses, through the emulation's C API (the function table).
TEST_CASE("conditional: host callables in bodies, nested too, run on the callback path on a stream that never "
          "launched one - acl",
          "[runtime][conditional][acl]") {
  // The callback path (aclrtLaunchCallback and a reporting thread per
  // stream): executing the parent must start the executing stream's
  // reporting thread for its bodies' callables, or they never run.
  keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR, false}};
  REQUIRE_FALSE(dev.functions().aclrtLaunchHostFunc);
  using B = keel::acl::backend;
  keel::acl::stream s{dev}, side{dev}, inner{dev};
  std::atomic<int> outer_runs{0}, nested_runs{0};
  keel::acl::model m;
  {
    keel::acl::capture_scope capture{s};
    auto c = keel::make_condition<B>(s, 1, false);
    auto then_body = keel::if_<B>(s, c);
    {
      keel::basic_body_capture_scope<B> into{side, then_body};
      side.launch_host([&] { ++outer_runs; });
      auto c2 = keel::make_condition<B>(side, 1, false);
      auto nested = keel::if_<B>(side, c2);
      {
        keel::basic_body_capture_scope<B> deeper{inner, nested};
        inner.launch_host([&] { ++nested_runs; });
        deeper.end();
      }
      into.end();
    }
    m = capture.end();
  }
  keel::acl::stream runner{dev};  // no host callable was ever launched on it
  m.execute(runner);
  runner.synchronize(std::chrono::seconds(10));
  CHECK(outer_runs == 1);
  CHECK(nested_runs == 1);
  m.execute(runner);
  runner.synchronize(std::chrono::seconds(10));
  CHECK(outer_runs == 2);
  CHECK(nested_runs == 2);
}

TEST_CASE("conditional: a WHILE body whose host callable throws on the callback path ends its loop - acl",
          "[runtime][conditional][acl]") {
  // The callback path: the callable runs on the executing stream's reporting thread.
  keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR, false}};
  REQUIRE_FALSE(dev.functions().aclrtLaunchHostFunc);
  keel::acl::stream s{dev}, side{dev};
  std::atomic<int> runs{0};
  keel::acl::model m;
  capture_failing_loop<acl>(s, side, m, runs);
  m.execute(s);
  KEEL_REQUIRE_ERROR(s.synchronize(std::chrono::seconds(10)), errc::task_failed, "the body's host function failed");
  CHECK(runs.load() == 2);
  m.execute(s);
  s.synchronize(std::chrono::seconds(10));
  CHECK(runs.load() == 3);
}

TEST_CASE("conditional: the C API's statuses for the conditional rules - acl", "[runtime][conditional][rules][acl]") {
  const keel::acl::api& api = acl::device().functions();
  keel::acl::stream_handle s = nullptr, side = nullptr;
  REQUIRE(api.aclrtCreateStream(&s) == 0);
  REQUIRE(api.aclrtCreateStream(&side) == 0);
  keel::acl::model_handle built = nullptr;
  REQUIRE(api.aclmdlRIBuildBegin(&built, 0) == 0);
  keel::acl::cond_handle h = nullptr;
  CHECK(api.aclmdlRICondHandleCreate(built, 0, keel::acl::cond_handle_flag::none, &h) == 107030);  // not capturing
  REQUIRE(api.aclmdlRICaptureBegin(s, keel::acl::capture_mode::global) == 0);
  keel::acl::capture_status st{};
  keel::acl::model_handle parent = nullptr;
  REQUIRE(api.aclmdlRICaptureGetInfo(s, &st, &parent) == 0);
  CHECK(api.aclmdlRICondHandleCreate(parent, 0, static_cast<keel::acl::cond_handle_flag>(4), &h) == 100000);
  REQUIRE(api.aclmdlRICondHandleCreate(parent, 1, keel::acl::cond_handle_flag::assign_default, &h) == 0);
  std::uint64_t* value = nullptr;
  REQUIRE(api.aclmdlRICondHandleGetCondPtr(h, &value) == 0);
  CHECK(*value == 1);
  keel::acl::model_handle bodies[2] = {nullptr, nullptr};
  CHECK(api.aclmdlRIAddCondTask({h, keel::acl::cond_task_type::switch_, 0, bodies}, s, 0) == 100000);
  CHECK(api.aclmdlRIAddCondTask({h, keel::acl::cond_task_type::while_, 2, bodies}, s, 0) == 100000);
  CHECK(api.aclmdlRIAddCondTask({h, keel::acl::cond_task_type::if_, 1, bodies}, side, 0) == 107030);
  REQUIRE(api.aclmdlRIAddCondTask({h, keel::acl::cond_task_type::if_, 2, bodies}, s, 0) == 0);
  CHECK(api.aclmdlRICaptureToModelRIBegin(side, built, keel::acl::capture_mode::global) == 100000);  // not a body
  REQUIRE(api.aclmdlRICaptureToModelRIBegin(side, bodies[0], keel::acl::capture_mode::global) == 0);
  keel::acl::model_handle ended = nullptr;
  REQUIRE(api.aclmdlRICaptureEnd(side, &ended) == 0);
  CHECK(ended == bodies[0]);
  CHECK(api.aclmdlRICaptureToModelRIBegin(side, bodies[0], keel::acl::capture_mode::global) == 107000);  // twice
  keel::acl::model_handle m = nullptr;
  REQUIRE(api.aclmdlRICaptureEnd(s, &m) == 0);
  CHECK(api.aclmdlRICaptureToModelRIBegin(side, bodies[1], keel::acl::capture_mode::global) == 107000);  // parent ended
  CHECK(api.aclmdlRIDestroy(bodies[0]) == 100000);  // a body goes with its parent
  CHECK(api.aclmdlRIExecuteAsync(m, s) == 0);
  CHECK(api.aclrtSynchronizeStream(s) == 0);
  CHECK(api.aclmdlRIDestroy(m) == 0);
  CHECK(api.aclmdlRIDestroy(built) == 0);
  for (auto x : {s, side}) CHECK(api.aclrtDestroyStream(x) == 0);
}
#endif
