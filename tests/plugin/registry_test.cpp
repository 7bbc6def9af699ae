// SPDX-License-Identifier: Apache-2.0
// registry<Entry, Policy> against every mutex policy: the std, Boost and
// checked ones and (single-threaded here) the null one.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "keel/core/checked_mutex.hpp"
#include "keel/core/mutex_policy.hpp"
#include "keel/plugin.hpp"
#include "support.hpp"
#ifdef KEEL_TEST_WITH_BOOST
#include "keel/core/boost_mutex_policy.hpp"
#define KEEL_TEST_POLICIES                                                                         \
  keel::std_shared_mutex_policy, keel::null_mutex_policy, keel::checked_mutex_policy, \
      keel::boost_shared_mutex_policy, keel::boost_upgrade_mutex_policy
#else
#define KEEL_TEST_POLICIES keel::std_shared_mutex_policy, keel::null_mutex_policy, keel::checked_mutex_policy
#endif

using keel::release_result;
using namespace keel_test;

TEMPLATE_TEST_CASE("registry: host entries are added, run, visited and removed", "[plugin][registry]",
                   KEEL_TEST_POLICIES) {
  keel::registry<std::function<int(int)>, TestType> reg;
  CHECK(reg.size() == 0);
  reg.add("double", [](int x) { return 2 * x; });
  reg.add("negate", [](int x) { return -x; });
  reg.add("add_one", [](int x) { return x + 1; });

  CHECK(reg.size() == 3);
  CHECK(reg.contains("double"));
  CHECK_FALSE(reg.contains("triple"));
  CHECK(reg.run("double", 21) == 42);
  CHECK(reg.names() == std::vector<std::string>{"add_one", "double", "negate"});

  int seen = 0;
  CHECK(reg.visit("negate", [&](const std::function<int(int)>& f) { seen = f(5); }));
  CHECK(seen == -5);
  CHECK_FALSE(reg.visit("triple", [&](const auto&) { seen = 99; }));
  CHECK(seen == -5);

  int chained = 1;
  reg.for_each([&](std::string_view, const std::function<int(int)>& f) { chained = f(chained); });
  CHECK(chained == -4);  // add_one, double, negate

  auto owner = reg.owner("double");
  REQUIRE(owner);
  CHECK(owner->host);
  CHECK(owner->library.empty());
  CHECK_FALSE(reg.owner("triple"));

  CHECK(reg.remove("negate"));
  CHECK_FALSE(reg.remove("negate"));
  CHECK(reg.size() == 2);
}

TEMPLATE_TEST_CASE("registry: a taken name or a missing entry is a keel::error, and nothing changes",
                   "[plugin][registry]", KEEL_TEST_POLICIES) {
  keel::registry<std::function<int(int)>, TestType> reg;
  reg.add("double", [](int x) { return 2 * x; });
  try {
    reg.add("double", [](int x) { return 3 * x; });
    FAIL("a taken name was accepted");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::errc::invalid_parameter);
    CHECK_THAT(e.what(), Catch::Contains("'double'") && Catch::Contains("by the host"));
  }
  CHECK(reg.run("double", 2) == 4);  // the first entry is untouched
  CHECK(reg.size() == 1);
  CHECK_THROWS_MATCHES(reg.run("triple", 1), keel::error, Catch::Predicate<keel::error>([](const keel::error& e) {
                         return e.code() == keel::errc::invalid_parameter &&
                                std::string(e.what()).find("'triple'") != std::string::npos;
                       }));
}

TEMPLATE_TEST_CASE("registry: entries owned by a library leave with its last lease", "[plugin][registry]",
                   KEEL_TEST_POLICIES) {
  using add_fn = int (*)(int, int);
  keel::registry<add_fn, TestType> reg;
  reg.add("host_add", [](int a, int b) { return a + b + 100; });
  {
    keel::library_lease lease = keel::library_loader::global().acquire(plain_path);
    auto plain_add = lease.import<int(int, int)>("keel_plain_add");
    reg.add_from(reinterpret_cast<const void*>(plain_add.get()), "plain_add", plain_add.get());
    auto owner = reg.owner("plain_add");
    REQUIRE(owner);
    CHECK_FALSE(owner->host);
    CHECK(owner->library == lease.path());
    CHECK(reg.run("plain_add", 2, 3) == 5);
  }
  CHECK_FALSE(keel::library_loader::is_mapped(plain_path));
  CHECK_FALSE(reg.contains("plain_add"));
  CHECK(reg.run("host_add", 2, 3) == 105);
}

TEST_CASE("registry: the checked policy reports re-entry instead of deadlocking", "[plugin][registry]") {
  keel::registry<int, keel::checked_mutex_policy> reg;
  reg.add("one", 1);
  bool reported = false;
  reg.visit("one", [&](int) {
    try {
      reg.add("two", 2);
    } catch (const keel::error& e) {
      reported = e.code() == keel::errc::would_deadlock;
    }
  });
  CHECK(reported);
  // Every stripe taken before the failure was given back: a writer gets in.
  reg.add("two", 2);
  CHECK(reg.size() == 2);
}

TEST_CASE("registry: the checked policy turns a last release inside an entry into a reported would_deadlock, "
          "the library kept loaded with its entries",
          "[plugin][registry]") {
  namespace fs = std::filesystem;
  // A private copy of the plain library: the loader keeps it loaded for the
  // rest of the process, which no other test may see.
  const fs::path copy = fs::temp_directory_path() / ("keel_registry_kept_" + std::to_string(::getpid()) + ".so");
  fs::copy_file(plain_path, copy, fs::copy_options::overwrite_existing);
  using fn = std::function<int(int, int)>;
  keel::registry<fn, keel::checked_mutex_policy> reg;
  keel::library_lease lease = keel::library_loader::global().acquire(copy);
  const std::string path = lease.path();
  auto plain_add = lease.import<int(int, int)>("keel_plain_add");
  reg.add_from(reinterpret_cast<const void*>(plain_add.get()), "copy_add", fn(plain_add.get()));
  plain_add = {};  // the lease alone holds the library now
  REQUIRE(lease.use_count() == 1);
  std::optional<release_result> released;
  reg.add("drop_last_lease", [&](int, int) {
    released = lease.release();  // under reg's shared lock: the unload would wait for itself
    return 0;
  });

  captured_reports reports;
  CHECK(reg.run("drop_last_lease", 0, 0) == 0);  // before the fix: std::terminate
  const auto got = reports.take();
  REQUIRE(got.size() == 1);
  CHECK(got[0].code == keel::errc::would_deadlock);
  CHECK(got[0].api == "library_lease::release");
  CHECK_THAT(got[0].message, Catch::Contains(path) && Catch::Contains("stays loaded"));
  REQUIRE(released);
  CHECK(*released == release_result::shared);
  CHECK_FALSE(lease);
  // The registry is as it was and its library entry still runs: its code stayed mapped.
  CHECK(reg.size() == 2);
  REQUIRE(reg.owner("copy_add"));
  CHECK(reg.owner("copy_add")->library == path);
  CHECK(reg.run("copy_add", 2, 3) == 5);
  CHECK(keel::library_loader::is_mapped(path));
  CHECK(keel::library_loader::global().use_count(path) == 1);  // the loader's kept lease
  // The loader is consistent too: the next lease shares the loaded library.
  keel::library_lease again = keel::library_loader::global().acquire(copy);
  CHECK(again.use_count() == 2);
  CHECK(again.release() == release_result::shared);
  CHECK(reg.remove("drop_last_lease"));
  fs::remove(copy);
}

TEST_CASE("registry: plugin passes are owned by the plugin, host passes by the host", "[plugin][registry]") {
  reset_events();
  passes().add("host_pass", [](graph& g) { g.log.push_back("host_pass"); });
  {
    keel::library_lease lease = keel::library_loader::global().acquire(passes_path);
    CHECK(passes().size() == 3);
    CHECK(passes().owner("host_pass")->host);
    CHECK_FALSE(passes().owner("fold_constants")->host);
  }
  CHECK(passes().size() == 1);
  CHECK(passes().contains("host_pass"));
  CHECK(passes().remove("host_pass"));
}
