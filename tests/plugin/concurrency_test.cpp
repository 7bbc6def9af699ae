// SPDX-License-Identifier: Apache-2.0
// Readers running passes while leases come and go, registrations from other
// threads during loads, and the ABBA with the C library's loader lock. Run
// under ThreadSanitizer in CI.
#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "keel/plugin.hpp"
#include "support.hpp"
#ifdef KEEL_TEST_WITH_BOOST
#include "keel/core/boost_mutex_policy.hpp"
#endif

using keel::release_result;
using namespace keel_test;
using namespace std::chrono_literals;

namespace {

// Waits for @p done with a deadline; a deadlock must fail the test, not hang CI.
template <class F>
void within(std::chrono::seconds limit, const char* what, F&& done) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) {
      FAIL_CHECK("deadlocked: " << what);
      std::_Exit(3);  // the deadlocked threads cannot be joined
    }
    std::this_thread::sleep_for(1ms);
  }
}

}  // namespace

TEST_CASE("registry: readers run passes while another thread leases and releases", "[plugin][registry][threads]") {
  reset_events();
  constexpr int rounds = 20;
  std::atomic<bool> stop{false};
  std::atomic<long> runs{0};
  std::atomic<long> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        passes().visit("fold_constants", [&](const pass& p) {
          graph g{3, {}};
          p(g);  // enters the plugin: it must be mapped and initialised
          if (g.value != 6) ++wrong;
          ++runs;
        });
        std::this_thread::yield();
      }
    });
  }
  int unloaded = 0;
  for (int round = 0; round < rounds; ++round) {
    keel::library_lease lease = loader().acquire(passes_path);
    const long before = runs.load();
    // Hold the lease until a reader has run a pass of this load.
    within(10s, "waiting for a reader", [&] { return runs.load() > before; });
    if (lease.release() == release_result::unloaded) ++unloaded;
  }
  stop = true;
  for (auto& r : readers) r.join();
  CHECK(unloaded == rounds);
  CHECK(wrong == 0);
  CHECK(runs >= rounds);
  CHECK(events().runs_after_fini == 0);
  CHECK(events().inits == rounds);
  CHECK(events().finis == rounds);
  CHECK_FALSE(passes().contains("fold_constants"));
}

#ifdef KEEL_TEST_WITH_BOOST
TEST_CASE("registry: Boost-policy readers call into a library while another thread leases and releases it",
          "[plugin][registry][threads]") {
  using add_fn = int (*)(int, int);
  keel::registry<add_fn, keel::boost_shared_mutex_policy> reg;
  std::atomic<bool> stop{false};
  std::atomic<long> runs{0};
  std::atomic<long> wrong{0};
  std::thread reader([&] {
    while (!stop.load()) {
      reg.visit("plain_add", [&](add_fn f) {
        if (f(2, 3) != 5) ++wrong;
        ++runs;
      });
      std::this_thread::yield();
    }
  });
  for (int round = 0; round < 20; ++round) {
    keel::library_lease lease = loader().acquire(plain_path);
    auto fn = lease.import<int(int, int)>("keel_plain_add");
    reg.add_from(reinterpret_cast<const void*>(fn.get()), "plain_add", fn.get());
    const long before = runs.load();
    within(10s, "waiting for a reader", [&] { return runs.load() > before; });
  }  // each round's lease and import go here; the entry leaves before dlclose
  stop = true;
  reader.join();
  CHECK(wrong == 0);
  CHECK(runs >= 20);
  CHECK_FALSE(reg.contains("plain_add"));
}
#endif

TEST_CASE("registry: host registrations from other threads during loads stay safe and stay the host's",
          "[plugin][registry][threads]") {
  reset_events();
  constexpr int count = 200;
  std::atomic<bool> started{false};
  std::thread host([&] {
    started = true;
    for (int i = 0; i < count; ++i) {
      passes().add("host_pass_" + std::to_string(i), [](graph& g) { g.log.push_back("host"); });
    }
  });
  while (!started.load()) std::this_thread::yield();
  for (int round = 0; round < 10; ++round) {
    keel::library_lease lease = loader().acquire(passes_path);
    CHECK(passes().contains("fold_constants"));
  }
  host.join();
  // A registration staged during a load becomes visible when the load ends.
  within(10s, "waiting for staged host entries", [] { return passes().staged() == 0; });
  CHECK(passes().size() == count);
  for (int i = 0; i < count; ++i) {
    auto owner = passes().owner("host_pass_" + std::to_string(i));
    REQUIRE(owner);
    CHECK(owner->host);
  }
  for (int i = 0; i < count; ++i) passes().remove("host_pass_" + std::to_string(i));
  CHECK(passes().size() == 0);
}

namespace {
std::atomic<int> abba_step{0};
// Runs inside dlopen on the loading thread, holding the C library's loader lock.
void abba_constructor_hook() {
  abba_step = 1;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (abba_step.load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  // Give the reader time to block in dlopen on the loader lock we hold.
  std::this_thread::sleep_for(20ms);
  // The plugin's KEEL_REGISTER constructors run after this one: they must not
  // wait for the registry, whose shared lock the blocked reader holds.
}
}  // namespace

TEST_CASE("registry: registering inside dlopen does not deadlock with a reader waiting for the loader lock",
          "[plugin][registry][threads]") {
  reset_events();
  passes().add("host_pass", [](graph&) {});
  abba_step = 0;
  events().constructor_hook = &abba_constructor_hook;
  std::atomic<bool> reader_done{false};
  std::thread reader([&] {
    // Holds the registry's shared lock, then needs the C library's loader
    // lock (as a pass that touches a new thread_local or calls dlopen would).
    passes().visit("host_pass", [&](const pass&) {
      while (abba_step.load() < 1) std::this_thread::yield();
      abba_step = 2;
      void* self = ::dlopen(nullptr, RTLD_LAZY);
      if (self != nullptr) ::dlclose(self);
    });
    reader_done = true;
  });
  std::atomic<bool> loaded{false};
  keel::library_lease lease;
  std::thread loading([&] {
    lease = loader().acquire(passes_path);
    loaded = true;
  });
  within(20s, "dlopen against a registry reader", [&] { return loaded.load() && reader_done.load(); });
  reader.join();
  loading.join();
  events().constructor_hook = nullptr;
  CHECK(passes().contains("fold_constants"));
  CHECK(lease.release() == release_result::unloaded);
  CHECK(passes().remove("host_pass"));
}

TEST_CASE("library_lease: concurrent first acquisitions load the library once", "[plugin][library_lease][threads]") {
  reset_events();
  for (int round = 0; round < 5; ++round) {
    std::atomic<int> ready{0};
    std::vector<keel::library_lease> leases(4);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < leases.size(); ++t) {
      threads.emplace_back([&, t] {
        ++ready;
        while (ready.load() < static_cast<int>(leases.size())) std::this_thread::yield();
        leases[t] = loader().acquire(passes_path);
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& l : leases) CHECK(l == leases[0]);
    CHECK(leases[0].use_count() == leases.size());
    CHECK(events().inits == round + 1);
    CHECK(events().constructions == round + 1);
    CHECK(passes().size() == 2);
    // Concurrent releases: exactly one of them is the last.
    std::atomic<int> last{0};
    threads.clear();
    for (auto& l : leases) {
      threads.emplace_back([&] {
        if (l.release() == release_result::unloaded) ++last;
      });
    }
    for (auto& t : threads) t.join();
    CHECK(last == 1);
    CHECK(events().finis == round + 1);
    CHECK(passes().size() == 0);
  }
}
