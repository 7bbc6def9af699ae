// SPDX-License-Identifier: Apache-2.0
// Fault injection: a task that throws, a host callable that blocks until a
// deadline, an allocation that fails (the host device's memory limit), a
// plugin whose registration throws halfway, and library files that are
// truncated or not libraries. Each yields its documented error; afterwards
// every object is usable or cleanly destroyable (LeakSanitizer checks the
// rest in the asan preset) and nothing is unloaded under a user.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "keel/runtime.hpp"

using namespace std::chrono_literals;
namespace host = keel::host;

namespace {

template <class F>
keel::error error_of(F&& f) {
  try {
    f();
  } catch (const keel::error& e) {
    return e;
  }
  FAIL("no keel::error was thrown");
  throw std::logic_error("unreachable");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("fault: a task that throws puts its stream in the error state until synchronize",
          "[reliability][fault][stream]") {
  host::device dev{host::device_options{1, 8, 4}};
  host::stream s{dev}, other{dev};
  host::event after_failure{dev};
  std::vector<int> ran;
  s.launch_host([&] { ran.push_back(1); });
  s.launch_host([] { throw std::runtime_error("sensor unplugged"); });
  s.launch_host([&] { ran.push_back(2); });  // skipped: the stream is in its error state
  after_failure.record(s);                   // records still run...
  other.wait(after_failure);                 // ...so another stream waiting on it never deadlocks
  other.launch_host([&] { ran.push_back(3); });
  other.synchronize();
  const keel::error e = error_of([&] { s.synchronize(); });
  CHECK(e.code() == keel::errc::task_failed);
  CHECK(contains(e.what(), "sensor unplugged"));
  CHECK(ran == std::vector<int>{1, 3});
  // Cleared: the stream is usable again.
  CHECK_NOTHROW(s.synchronize());
  s.launch_host([&] { ran.push_back(4); });
  s.synchronize();
  CHECK(ran == std::vector<int>{1, 3, 4});

  SECTION("a captured task that throws on replay") {
    host::model m;
    {
      host::capture_scope capture{s, keel::capture_mode::relaxed};
      s.launch_host([&] { ran.push_back(5); });
      s.launch_host([] { throw std::runtime_error("replay failure"); });
      m = capture.end();
    }
    m.execute(other);
    const keel::error r = error_of([&] { other.synchronize(); });
    CHECK(r.code() == keel::errc::task_failed);
    CHECK(contains(r.what(), "replay failure"));
    // The model is unchanged and replays again; the stream is usable.
    m.execute(other);
    CHECK(error_of([&] { other.synchronize(); }).code() == keel::errc::task_failed);
    CHECK(m.task_count() == 2);
    CHECK(ran == std::vector<int>{1, 3, 4, 5, 5});
  }
  SECTION("destroying a stream in its error state reports through the handler, never throws") {
    static std::atomic<int> reports{0};
    reports = 0;
    const auto previous = keel::set_error_handler([](std::error_code c, const char*, const char*) noexcept {
      if (c == keel::errc::task_failed) ++reports;
    });
    s.launch_host([] { throw std::runtime_error("late failure"); });
    s.reset();
    keel::set_error_handler(previous);
    CHECK(reports == 1);
  }
}

TEST_CASE("fault: a host callable that blocks until a deadline", "[reliability][fault][stream]") {
  host::device dev{host::device_options{1, 8, 4, 1 << 20}};
  host::stream s{dev};
  host::event done{dev};
  const auto deadline = std::chrono::steady_clock::now() + 600ms;  // long enough for a loaded CI machine
  std::atomic<bool> finished{false};
  {
    host::device_buffer scratch{s, 4096};
    std::byte* data = scratch.data_as<std::byte>();
    s.launch_host([deadline, data] {
      std::this_thread::sleep_until(deadline);
      data[0] = std::byte{42};  // still valid: its release is ordered after this task
    });
    s.launch_host([&] { finished = true; });
    done.record(s);
  }  // the buffer is released on the host, in stream order
  CHECK(dev.memory_in_use() == 4096);  // not freed under the blocked task
  CHECK_FALSE(s.query());
  CHECK_FALSE(done.query());
  s.synchronize();
  CHECK(std::chrono::steady_clock::now() >= deadline);
  CHECK(finished);
  CHECK(done.query());
  // The release runs right after the tasks before it, on the worker.
  for (int i = 0; i < 1000 && dev.memory_in_use() != 0; ++i) std::this_thread::sleep_for(1ms);
  CHECK(dev.memory_in_use() == 0);

  SECTION("destroying a stream whose task is blocked waits for it") {
    std::atomic<bool> ran{false};
    const auto until = std::chrono::steady_clock::now() + 100ms;
    s.launch_host([&, until] {
      std::this_thread::sleep_until(until);
      ran = true;
    });
    s.reset();
    CHECK(ran);
    CHECK(std::chrono::steady_clock::now() >= until);
  }
}

TEST_CASE("fault: an allocation that fails yields out_of_memory and leaves everything usable",
          "[reliability][fault][buffer]") {
  host::device dev{host::device_options{1, 8, 4, 1024}};
  host::stream s{dev};
  host::device_buffer a{s, 512};
  CHECK(dev.memory_in_use() == 512);
  const keel::error e = error_of([&] { host::device_buffer b{s, 600}; });
  CHECK(e.code() == keel::errc::out_of_memory);
  CHECK(contains(e.what(), "600 bytes"));
  CHECK(error_of([&] { host::pinned_buffer p{s, 4096}; }).code() == keel::errc::out_of_memory);
  CHECK(dev.memory_in_use() == 512);  // the failures reserved nothing
  // The buffer that was allocated still works.
  const char text[] = "still usable";
  s.copy_async(a.span(), keel::host_span(text, sizeof text));
  char back[sizeof text] = {};
  s.copy_async(back, a.data(), sizeof back, keel::copy_kind::device_to_host);
  s.synchronize();
  CHECK(std::string(back) == text);

  SECTION("memory released in stream order counts until the stream passes the release") {
    std::atomic<bool> open{false};
    s.launch_host([&] {
      while (!open) std::this_thread::yield();
    });
    a.reset();  // released on the host, but the stream has not passed it
    CHECK(error_of([&] { host::device_buffer b{s, 600}; }).code() == keel::errc::out_of_memory);
    open = true;
    s.synchronize();
    for (int i = 0; i < 1000 && dev.memory_in_use() != 0; ++i) std::this_thread::sleep_for(1ms);
    host::device_buffer b{s, 600};  // now it fits
    CHECK(b.size() == 600);
  }
  SECTION("failures under contention never over-commit") {
    // (Catch2 assertions are not thread-safe: the threads count, the test checks.)
    std::atomic<int> ok{0}, refused{0}, over{0}, other{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 200; ++i) {
          try {
            host::device_buffer b{s, 256};
            if (dev.memory_in_use() > 1024) ++over;
            ++ok;
          } catch (const keel::error& err) {
            ++(err.code() == keel::errc::out_of_memory ? refused : other);
          }
        }
      });
    for (auto& t : threads) t.join();
    s.synchronize();
    CHECK(ok + refused == 800);
    CHECK(ok > 0);
    CHECK(over == 0);
    CHECK(other == 0);
  }
}
