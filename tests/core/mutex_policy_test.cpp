// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <keel/core/error.hpp>
#include <keel/core/mutex_policy.hpp>
#include <keel/core/test_and_set_lock.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "policies.hpp"

using namespace std::chrono_literals;

TEMPLATE_LIST_TEST_CASE("mutex policy: names a SharedMutex and describes itself", "[core][mutex_policy]",
                        keel_test::all_policies) {
  STATIC_REQUIRE(keel::is_mutex_policy_v<TestType>);
  CHECK_FALSE(TestType::name.empty());
  typename TestType::mutex_type mutex;
  mutex.lock();
  mutex.unlock();
  mutex.lock_shared();
  mutex.unlock_shared();
  REQUIRE(mutex.try_lock());
  mutex.unlock();
  REQUIRE(mutex.try_lock_shared());
  mutex.unlock_shared();
}

TEMPLATE_LIST_TEST_CASE("mutex policy: a held exclusive lock excludes other threads", "[core][mutex_policy]",
                        keel_test::thread_safe_policies) {
  typename TestType::mutex_type mutex;
  mutex.lock();
  bool other_got_exclusive = true;
  bool other_got_shared = true;
  std::thread([&] {
    other_got_exclusive = mutex.try_lock();
    if (other_got_exclusive) mutex.unlock();
    other_got_shared = mutex.try_lock_shared();
    if (other_got_shared) mutex.unlock_shared();
  }).join();
  mutex.unlock();
  CHECK_FALSE(other_got_exclusive);
  CHECK_FALSE(other_got_shared);
}

TEMPLATE_LIST_TEST_CASE("mutex policy: shared locks are held by several threads at once", "[core][mutex_policy]",
                        keel_test::thread_safe_policies) {
  typename TestType::mutex_type mutex;
  mutex.lock_shared();
  bool other_got_shared = false;
  bool other_got_exclusive = true;
  std::thread([&] {
    other_got_shared = mutex.try_lock_shared();
    if (other_got_shared) mutex.unlock_shared();
    other_got_exclusive = mutex.try_lock();
    if (other_got_exclusive) mutex.unlock();
  }).join();
  mutex.unlock_shared();
  CHECK(other_got_shared);
  CHECK_FALSE(other_got_exclusive);
}

TEST_CASE("null_mutex_policy: costs no space and always succeeds", "[core][mutex_policy]") {
  STATIC_REQUIRE(std::is_empty_v<keel::null_shared_mutex>);
  STATIC_REQUIRE_FALSE(keel::null_mutex_policy::is_thread_safe);
  keel::null_shared_mutex mutex;
  mutex.lock();
  CHECK(mutex.try_lock());  // no exclusion at all: documented single-threaded use
  mutex.unlock();
}

TEST_CASE("checked_mutex_policy: re-locking from the holding thread is an error, not a hang",
          "[core][mutex_policy]") {
  keel::checked_mutex_policy::mutex_type mutex;
  auto expect_would_deadlock = [](auto&& lock_again) {
    try {
      lock_again();
      FAIL("locking a held mutex again did not throw");
    } catch (const keel::error& e) {
      CHECK(e.code() == keel::errc::would_deadlock);
      CHECK(std::string(e.rule()).find("already holds") != std::string::npos);
    }
  };
  SECTION("exclusive then exclusive") {
    std::unique_lock<decltype(mutex)> held(mutex);
    expect_would_deadlock([&] { mutex.lock(); });
    expect_would_deadlock([&] { (void)mutex.try_lock(); });
  }
  SECTION("exclusive then shared") {
    std::unique_lock<decltype(mutex)> held(mutex);
    expect_would_deadlock([&] { mutex.lock_shared(); });
  }
  SECTION("shared then exclusive") {
    std::shared_lock<decltype(mutex)> held(mutex);
    expect_would_deadlock([&] { mutex.lock(); });
  }
  SECTION("shared then shared") {
    std::shared_lock<decltype(mutex)> held(mutex);
    expect_would_deadlock([&] { mutex.lock_shared(); });
  }
  // The failed attempt left the mutex as it was: the outer lock was released
  // normally, and the mutex is free for everyone again.
  CHECK_FALSE(mutex.held_by_this_thread());
  bool other_got_it = false;
  std::thread([&] {
    other_got_it = mutex.try_lock();
    if (other_got_it) mutex.unlock();
  }).join();
  CHECK(other_got_it);
}

TEST_CASE("held_by_this_thread: a checked mutex answers for the calling thread, the others cannot tell",
          "[core][mutex_policy]") {
  keel::checked_mutex_policy::mutex_type checked;
  std::shared_mutex plain;
  static_assert(keel::detail::tracks_holders<keel::checked_mutex_policy::mutex_type>::value);
  static_assert(!keel::detail::tracks_holders<std::shared_mutex>::value);
  CHECK_FALSE(keel::detail::held_by_this_thread(checked));
  {
    std::shared_lock<decltype(checked)> held(checked);
    std::unique_lock<std::shared_mutex> plain_held(plain);
    CHECK(keel::detail::held_by_this_thread(checked));
    CHECK_FALSE(keel::detail::held_by_this_thread(plain));  // std::shared_mutex keeps no holders
    bool seen_elsewhere = true;
    std::thread([&] { seen_elsewhere = keel::detail::held_by_this_thread(checked); }).join();
    CHECK_FALSE(seen_elsewhere);
  }
  CHECK_FALSE(keel::detail::held_by_this_thread(checked));
}

TEST_CASE("checked_mutex_policy: other threads still wait normally", "[core][mutex_policy]") {
  keel::checked_mutex_policy::mutex_type mutex;
  std::atomic<bool> writer_done{false};
  mutex.lock();
  std::thread writer([&] {
    mutex.lock();  // another thread: waits, does not throw
    writer_done = true;
    mutex.unlock();
  });
  std::this_thread::sleep_for(20ms);
  CHECK_FALSE(writer_done.load());
  mutex.unlock();
  writer.join();
  CHECK(writer_done.load());
}

TEST_CASE("test_and_set_lock: try_lock fails while held and succeeds once released, std::scoped_lock takes two",
          "[core][lock]") {
  keel::detail::test_and_set_lock a, b;
  REQUIRE(a.try_lock());
  CHECK_FALSE(a.try_lock());
  a.unlock();
  CHECK(a.try_lock());
  a.unlock();
  std::atomic<int> inside{0}, overlaps{0};
  const auto both = [&](bool reversed) {
    for (int i = 0; i < 2000; ++i) {
      if (reversed) {
        std::scoped_lock locks(b, a);
        if (inside.fetch_add(1) != 0) ++overlaps;
        inside.fetch_sub(1);
      } else {
        std::scoped_lock locks(a, b);
        if (inside.fetch_add(1) != 0) ++overlaps;
        inside.fetch_sub(1);
      }
    }
  };
  std::thread t1(both, false), t2(both, true);  // opposite orders: std::lock's back-off, no deadlock
  t1.join();
  t2.join();
  CHECK(overlaps == 0);
  CHECK(a.try_lock());
  CHECK(b.try_lock());
  a.unlock();
  b.unlock();
}
