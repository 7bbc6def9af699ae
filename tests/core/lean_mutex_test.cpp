// SPDX-License-Identifier: Apache-2.0
// keel::detail::lean_mutex, the checked layer's device-books lock: mutual
// exclusion under contention (the sleeping path included), try_lock, and a
// holder that keeps it long while others wait (ThreadSanitizer-clean).
#include <catch2/catch.hpp>

#include <keel/core/lean_mutex.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace {
// Two counters the holder always changes together: a thread that ever sees
// them differ ran inside the section beside another.
struct lean_mutex_pair {
  long first = 0;
  long second = 0;
};
}  // namespace

TEST_CASE("lean_mutex: threads that contend never share the section", "[core][lean_mutex]") {
  keel::detail::lean_mutex m;
  lean_mutex_pair p;
  std::atomic<bool> torn{false};
  constexpr int threads = 4, rounds = 20000;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < rounds; ++i) {
        std::lock_guard<keel::detail::lean_mutex> lock(m);
        if (p.first != p.second) torn.store(true);
        ++p.first;
        if (i % 64 == 0) std::this_thread::yield();  // a holder descheduled: the others sleep on the lock
        ++p.second;
      }
    });
  }
  for (std::thread& w : workers) w.join();
  CHECK_FALSE(torn.load());
  CHECK(p.first == long{threads} * rounds);
  CHECK(p.second == p.first);
}

TEST_CASE("lean_mutex: try_lock fails while held and succeeds once released", "[core][lean_mutex]") {
  keel::detail::lean_mutex m;
  REQUIRE(m.try_lock());
  CHECK_FALSE(m.try_lock());
  std::thread other([&] { CHECK_FALSE(m.try_lock()); });
  other.join();
  m.unlock();
  std::thread again([&] {
    CHECK(m.try_lock());
    m.unlock();
  });
  again.join();
}

TEST_CASE("lean_mutex: a waiter sleeps behind a long holder and takes the lock when it is released",
          "[core][lean_mutex]") {
  keel::detail::lean_mutex m;
  std::atomic<bool> released{false}, acquired{false};
  m.lock();
  std::thread waiter([&] {
    std::lock_guard<keel::detail::lean_mutex> lock(m);
    CHECK(released.load());  // only after the holder let go
    acquired.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the waiter's spin: it sleeps
  CHECK_FALSE(acquired.load());
  released.store(true);
  m.unlock();
  waiter.join();
  CHECK(acquired.load());
}
