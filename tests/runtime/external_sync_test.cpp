// SPDX-License-Identifier: Apache-2.0
// External sync of models (event_operation::external): a
// default event recorded inside a model so that streams and other models wait
// on it, and waited on inside a model for a record made outside it; each
// execution takes its points when it is issued. Every rule is broken once with
// its error checked and the objects usable afterwards. Each test runs on the
// host and the ACL backend; the last one calls the emulation's C API for
// CANN's statuses.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <thread>

#include "test_support.hpp"

using keel::errc;
using keel::event_operation;

namespace {
// Long enough for a stream that should wait to have run past its wait if it did not.
void let_waiters_run() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); }
}  // namespace

KEEL_BACKEND_TEST("external sync: a model waits inside itself on a stream's record made before its execution",
                  "[runtime][model][external]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, producer{dev};
  event ready{dev};
  float src = 0.0f, dst = 0.0f;
  const float value = 7.0f;
  model m;
  {
    capture_scope capture{s};
    s.wait(ready, event_operation::external);  // the record comes from outside the model
    TestType::copy(s, &dst, &src);
    m = capture.end();
  }
  CHECK(m.task_count() == 2);
  keel::testing::gate g;
  g.hold(producer.ref());
  TestType::copy(producer, &src, &value);
  ready.record(producer);
  m.execute(s);  // waits for the record just made
  let_waiters_run();
  CHECK_FALSE(s.query());
  CHECK(dst == 0.0f);
  g.open();
  s.synchronize();
  CHECK(dst == value);
  // Executed again after no new record: the last record is complete, nothing to wait for.
  dst = 0.0f;
  m.execute(s);
  s.synchronize();
  CHECK(dst == value);
}

KEEL_BACKEND_TEST("external sync: a stream waits on a model's record of the execution issued before the wait",
                  "[runtime][model][external]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, consumer{dev};
  event done{dev};
  float src = 3.0f, mid = 0.0f, dst = 0.0f;
  model m;
  {
    capture_scope capture{s};
    TestType::copy(s, &mid, &src);
    done.record(s, event_operation::external);
    m = capture.end();
  }
  for (float round : {3.0f, 5.0f}) {
    src = round;
    keel::testing::gate g;
    g.hold(s.ref());
    m.execute(s);  // the record's point is taken here, in s's order
    consumer.wait(done);  // so this waits for this execution, though it has not run yet
    TestType::copy(consumer, &dst, &mid);
    let_waiters_run();
    CHECK_FALSE(consumer.query());
    CHECK_FALSE(done.query());
    g.open();
    consumer.synchronize();
    CHECK(dst == round);
    CHECK(done.query());
  }
}

KEEL_BACKEND_TEST("external sync: one model records an event externally and another waits on it",
                  "[runtime][model][external]") {
  KEEL_USING_BACKEND(TestType);
  stream s1{dev}, s2{dev};
  event link{dev};
  float src = 11.0f, mid = 0.0f, dst = 0.0f;
  model first, second;
  {
    capture_scope capture{s1};
    TestType::copy(s1, &mid, &src);
    link.record(s1, event_operation::external);
    first = capture.end();
  }
  {
    capture_scope capture{s2};
    s2.wait(link, event_operation::external);
    TestType::copy(s2, &dst, &mid);
    second = capture.end();
  }
  keel::testing::gate g;
  g.hold(s1.ref());
  first.execute(s1);
  second.execute(s2);  // waits for first's record of the execution above
  let_waiters_run();
  CHECK_FALSE(s2.query());
  CHECK(dst == 0.0f);
  g.open();
  s2.synchronize();
  CHECK(dst == src);
  s1.synchronize();
}

KEEL_BACKEND_TEST("external sync: a built model's external record, on a bound stream, is seen by a stream waiting "
                  "after the execution",
                  "[runtime][model][external][built]") {
  KEEL_USING_BACKEND(TestType);
  using B = typename TestType::backend;
  stream runner{dev}, consumer{dev};
  stream head{keel::make_persistent_stream<B>(dev)};
  event done{dev};
  float src = 4.0f, mid = 0.0f, dst = 0.0f;
  model m;
  {
    keel::basic_model_builder<B> builder{dev};
    builder.bind(head, keel::bound_stream::head);
    TestType::copy(head, &mid, &src);
    done.record(head, event_operation::external);
    builder.end_task(head);
    m = builder.end();
  }
  keel::testing::gate g;
  g.hold(runner.ref());
  m.execute(runner);
  consumer.wait(done);
  TestType::copy(consumer, &dst, &mid);
  let_waiters_run();
  CHECK_FALSE(consumer.query());
  g.open();
  consumer.synchronize();
  CHECK(dst == src);
  runner.synchronize();
}

KEEL_BACKEND_TEST("external sync: every rule of the external operations is checked and leaves the objects usable",
                  "[runtime][model][external][rules]") {
  KEEL_USING_BACKEND(TestType);
  stream s{dev}, other{dev};
  event e{dev}, both{dev};
  event timing{dev, keel::event_flags::timing};
  event ext{dev, keel::event_flags::external};
  float src = 2.0f, dst = 0.0f;

  // Only on a capturing stream.
  KEEL_REQUIRE_ERROR(e.record(s, event_operation::external), errc::capture_violation, "only on a capturing stream");
  KEEL_REQUIRE_ERROR(s.wait(e, event_operation::external), errc::capture_violation, "only on a capturing stream");
  CHECK(e.query());  // never recorded: complete
  event outside{dev};
  outside.record(other);
  other.synchronize();

  model m;
  {
    capture_scope capture{s};
    // Only default events.
    KEEL_REQUIRE_ERROR(timing.record(s, event_operation::external), errc::invalid_parameter, "default flags");
    KEEL_REQUIRE_ERROR(s.wait(ext, event_operation::external), errc::invalid_parameter, "default flags");
    // A plain wait on a record made outside the capture is refused, and says how to wait on one.
    KEEL_REQUIRE_ERROR(s.wait(outside), errc::capture_violation, "event_operation::external");
    // An event a plain record recorded takes no external operation (CANN's rule).
    KEEL_REQUIRE_ERROR(s.wait(outside, event_operation::external), errc::invalid_state, "plain record");
    // One capture records or waits on an event externally, never both.
    both.record(s, event_operation::external);
    KEEL_REQUIRE_ERROR(s.wait(both, event_operation::external), errc::capture_violation, "both record and wait");
    TestType::copy(s, &dst, &src);
    e.record(s, event_operation::default_);  // the default operation is the plain record: an edge
    m = capture.end();
  }
  CHECK(m.task_count() == 2);  // the external record and the copy; refused calls left nothing
  m.execute(s);
  other.wait(both);
  s.synchronize();
  other.synchronize();
  CHECK(dst == src);
  CHECK(both.query());
  // The objects stay usable: the refused events record and wait plainly.
  timing.record(s);
  ext.record(s);
  s.wait(ext);
  s.synchronize();
  CHECK(ext.query());
}

#ifdef KEEL_ACL_EMULATION_DIR
TEST_CASE("external sync: the C API's statuses for the external operations - acl",
          "[runtime][model][external][rules][acl]") {
  const keel::acl::api& api = acl::device().functions();
  keel::acl::stream_handle s = nullptr, other = nullptr;
  REQUIRE(api.aclrtCreateStream(&s) == 0);
  REQUIRE(api.aclrtCreateStream(&other) == 0);
  keel::acl::event_handle ex = nullptr, plain = nullptr;
  REQUIRE(api.aclrtCreateEventExWithFlag(&ex, keel::acl::event_flags::sync) == 0);
  REQUIRE(api.aclrtCreateEventWithFlag(&plain, keel::acl::event_flags::sync) == 0);
  const std::uint32_t record_external = keel::acl::record_flags::external;
  const std::uint32_t wait_external = keel::acl::wait_flags::external;
  // Not capturing: ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT, as the other capture-only calls.
  CHECK(api.aclrtRecordEventWithFlag(ex, s, record_external) == 107030);
  CHECK(api.aclrtStreamWaitEventWithFlag(s, ex, 0, wait_external) == 107030);
  REQUIRE(api.aclmdlRICaptureBegin(s, keel::acl::capture_mode::global) == 0);
  // Not an aclrtCreateEventExWithFlag event, or a timeout other than 0: ACL_ERROR_INVALID_PARAM.
  CHECK(api.aclrtRecordEventWithFlag(plain, s, record_external) == 100000);
  CHECK(api.aclrtStreamWaitEventWithFlag(s, ex, 5, wait_external) == 100000);
  CHECK(api.aclrtRecordEventWithFlag(ex, s, 2) == 100000);
  REQUIRE(api.aclrtRecordEventWithFlag(ex, s, record_external) == 0);
  CHECK(api.aclrtStreamWaitEventWithFlag(s, ex, 0, wait_external) == 107030);  // both in one capture
  keel::acl::model_handle m = nullptr;
  REQUIRE(api.aclmdlRICaptureEnd(s, &m) == 0);
  REQUIRE(api.aclmdlRIExecuteAsync(m, s) == 0);
  CHECK(api.aclrtStreamWaitEvent(other, ex) == 0);  // the model's record, seen from outside
  CHECK(api.aclrtSynchronizeStream(other) == 0);
  CHECK(api.aclrtSynchronizeStream(s) == 0);
  // The vendor's sample passes -1 as the timeout; it means no timeout, as 0 does.
  keel::acl::event_handle later = nullptr;
  REQUIRE(api.aclrtCreateEventExWithFlag(&later, keel::acl::event_flags::sync) == 0);
  REQUIRE(api.aclmdlRICaptureBegin(other, keel::acl::capture_mode::global) == 0);
  CHECK(api.aclrtStreamWaitEventWithFlag(other, later, UINT32_MAX, wait_external) == 0);
  keel::acl::model_handle waits = nullptr;
  REQUIRE(api.aclmdlRICaptureEnd(other, &waits) == 0);
  REQUIRE(api.aclrtRecordEvent(later, s) == 0);
  REQUIRE(api.aclmdlRIExecuteAsync(waits, other) == 0);
  CHECK(api.aclrtSynchronizeStream(other) == 0);
  // A plainly recorded event takes no external operation (ACL_ERROR_RT_PARAM_INVALID).
  REQUIRE(api.aclmdlRICaptureBegin(s, keel::acl::capture_mode::global) == 0);
  CHECK(api.aclrtRecordEventWithFlag(later, s, record_external) == 107000);
  keel::acl::model_handle empty = nullptr;
  REQUIRE(api.aclmdlRICaptureEnd(s, &empty) == 0);
  for (auto x : {m, waits, empty}) CHECK(api.aclmdlRIDestroy(x) == 0);
  for (auto x : {ex, plain, later}) CHECK(api.aclrtDestroyEvent(x) == 0);
  for (auto x : {s, other}) CHECK(api.aclrtDestroyStream(x) == 0);
}
#endif
