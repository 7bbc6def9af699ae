// SPDX-License-Identifier: Apache-2.0
// Task-failure subscriptions (keel/runtime/task_failures.hpp) on both
// backends: a task fails when its bounded wait on an event expires (the
// event's record is held back by a host task until the wait has failed).
#include "test_support.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "keel/host/task_failures.hpp"
#ifdef KEEL_ACL_EMULATION_DIR
#include "keel/acl/task_failures.hpp"
#endif

namespace {

// What each backend's subscription is and what it says of the failed wait.
template <class F>
struct failure_traits;
template <>
struct failure_traits<host> {
  using subscription = keel::host::task_failure_subscription;
  static int device_id() { return 0; }
  static std::error_code wait_expired() { return make_error_code(keel::errc::timeout); }
};
#ifdef KEEL_ACL_EMULATION_DIR
template <>
struct failure_traits<acl> {
  using subscription = keel::acl::task_failure_subscription;
  static int device_id() { return acl::device().id(); }
  static std::error_code wait_expired() { return keel::acl::make_status_code(507015); }  // ACL_ERROR_RT_AICORE_EXCEPTION
};
#endif

// What one subscriber heard.
struct heard {
  std::mutex m;
  std::vector<keel::task_failure> failures;
  void operator()(const keel::task_failure& f) {
    std::lock_guard<std::mutex> lock(m);
    failures.push_back(f);
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(m);
    return failures.size();
  }
};

// Issues a task on `failing` that fails: a 1 ms wait on an event whose
// record waits behind `held`'s gate. Returns once the wait task has failed
// (the gate is open then, and `held` drained).
template <class F, class Stream>
void fail_a_task(Stream& failing) {
  KEEL_USING_BACKEND(F);
  stream held{F::device()};
  event e{F::device()};
  keel_test::gate g;
  g.hold(held.ref());
  e.record(held);
  failing.wait(e, std::chrono::milliseconds(1));
  try {
    failing.synchronize();
    FAIL("the wait did not fail");
  } catch (const keel::error&) {
  }
  g.open();
  held.synchronize();
}

}  // namespace

KEEL_BACKEND_TEST("task failure subscription: told of a failed task's device, runtime stream id and error",
                  "[runtime][task_failures]") {
  KEEL_USING_BACKEND(TestType);
  using traits = failure_traits<TestType>;
  heard h;
  typename traits::subscription sub{TestType::device(), [&](const keel::task_failure& f) { h(f); }};
  CHECK(static_cast<bool>(sub));
  stream failing{TestType::device()};
  fail_a_task<TestType>(failing);
  REQUIRE(h.count() == 1);  // told before synchronize() reported the failure
  const keel::task_failure f = h.failures.front();
  CHECK(f.device == traits::device_id());
  CHECK(f.runtime_stream_id == failing.runtime_id());
  CHECK(f.code == traits::wait_expired());
  // The stream is usable again once the failure was reported; a second failure is told again.
  failing.synchronize();
  fail_a_task<TestType>(failing);
  CHECK(h.count() == 2);
}

KEEL_BACKEND_TEST("task failure subscription: an ended subscription is not told, and two subscribers each hear once",
                  "[runtime][task_failures]") {
  KEEL_USING_BACKEND(TestType);
  using traits = failure_traits<TestType>;
  heard first, second, ended, moved_from_ended;
  typename traits::subscription a{TestType::device(), [&](const keel::task_failure& f) { first(f); }};
  typename traits::subscription b{TestType::device(), [&](const keel::task_failure& f) { second(f); }};
  typename traits::subscription c{TestType::device(), [&](const keel::task_failure& f) { ended(f); }};
  c.reset();
  CHECK_FALSE(static_cast<bool>(c));
  {
    typename traits::subscription d{TestType::device(), [&](const keel::task_failure& f) { moved_from_ended(f); }};
    typename traits::subscription taken = std::move(d);
    CHECK_FALSE(static_cast<bool>(d));
    CHECK(static_cast<bool>(taken));
  }  // `taken` ends here
  stream failing{TestType::device()};
  fail_a_task<TestType>(failing);
  CHECK(first.count() == 1);
  CHECK(second.count() == 1);
  CHECK(ended.count() == 0);
  CHECK(moved_from_ended.count() == 0);
  a = std::move(b);  // ends a's subscription, takes b's
  fail_a_task<TestType>(failing);
  CHECK(first.count() == 1);
  CHECK(second.count() == 2);
}

KEEL_BACKEND_TEST("task failure subscription: ending it waits for a call in progress", "[runtime][task_failures]") {
  KEEL_USING_BACKEND(TestType);
  using traits = failure_traits<TestType>;
  std::atomic<bool> entered{false}, release{false}, returned{false};
  auto sub = std::make_unique<typename traits::subscription>(TestType::device(), [&](const keel::task_failure&) {
    entered.store(true);
    while (!release.load()) std::this_thread::yield();
    returned.store(true);
  });
  stream failing{TestType::device()};
  stream held{TestType::device()};
  event e{TestType::device()};
  keel_test::gate g;
  g.hold(held.ref());
  e.record(held);
  failing.wait(e, std::chrono::milliseconds(1));
  while (!entered.load()) std::this_thread::yield();
  std::atomic<bool> ended{false};
  std::thread ender([&] {
    sub.reset();
    ended.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(ended.load());  // the call is still running: the subscription has not ended
  release.store(true);
  ender.join();
  CHECK(returned.load());  // it ended only after the call returned
  bool reported = false;
  try {
    failing.synchronize();
  } catch (const keel::error&) {
    reported = true;
  }
  CHECK(reported);
  g.open();
  held.synchronize();
}

KEEL_BACKEND_TEST("task failure subscription: an empty function is refused", "[runtime][task_failures]") {
  using traits = failure_traits<TestType>;
  auto subscribe_nothing = [] {
    typename traits::subscription sub{TestType::device(), {}};
    return static_cast<bool>(sub);
  };
  KEEL_REQUIRE_ERROR((void)subscribe_nothing(), keel::errc::null_parameter, "the function to call is empty");
}
