// SPDX-License-Identifier: Apache-2.0
// Load, unload, load again: the entries must be there every time, whether
// dlclose unmapped the library (constructors rerun) or not (keel replays the
// registrations), and registrations through the entry point or a plugin's own
// thread must follow the plugin too.
#include <catch2/catch.hpp>
#include <filesystem>

#include "keel/plugin.hpp"
#include "support.hpp"

using keel::release_result;
using namespace keel_test;

TEST_CASE("library_lease: load, unload and load again finds the entries every time", "[plugin][library_lease]") {
  reset_events();
  for (int round = 1; round <= 10; ++round) {
    keel::library_lease lease = loader().acquire(passes_path);
    REQUIRE(passes().contains("fold_constants"));
    REQUIRE(passes().contains("eliminate_dead_code"));
    graph g{1, {}};
    passes().run("fold_constants", g);
    CHECK(g.value == 2);
    CHECK(lease.release() == release_result::unloaded);
    CHECK_FALSE(passes().contains("fold_constants"));
    CHECK(events().constructions == round);  // really unmapped: the constructors ran again
    CHECK(events().inits == round);
    CHECK(events().finis == round);
  }
}

TEST_CASE("library_lease: a library dlclose keeps mapped gets its registrations replayed",
          "[plugin][library_lease]") {
  reset_events();
  for (int round = 1; round <= 10; ++round) {
    keel::library_lease lease = loader().acquire(passes_nodelete_path);
    REQUIRE(passes().contains("fold_constants"));
    REQUIRE(passes().contains("eliminate_dead_code"));
    auto owner = passes().owner("eliminate_dead_code");
    REQUIRE(owner);
    CHECK(owner->library == canonical(passes_nodelete_path));
    graph g{1, {}};
    passes().run("eliminate_dead_code", g);
    CHECK(g.value == 2);
    CHECK(lease.release() == release_result::still_mapped);
    CHECK_FALSE(passes().contains("fold_constants"));
    CHECK(keel::library_loader::is_mapped(passes_nodelete_path));
    CHECK(events().inits == round);
    CHECK(events().finis == round);
  }
  // -z nodelete: mapped once, constructors ran once; every other round was a replay.
  CHECK(events().constructions <= 1);
  CHECK(events().runs_after_fini == 0);
}

TEST_CASE("library_lease: the exported registration entry point runs on every first lease",
          "[plugin][library_lease]") {
  reset_events();
  for (int round = 1; round <= 5; ++round) {
    keel::library_lease lease = loader().acquire(entry_point_path);
    CHECK(events().register_calls == round);
    auto owner = passes().owner("entry_point_pass");
    REQUIRE(owner);
    CHECK(owner->library == canonical(entry_point_path));
    keel::library_lease second = loader().acquire(entry_point_path);
    CHECK(events().register_calls == round);  // only the first lease registers
    second.release();
    lease.release();
    CHECK_FALSE(passes().contains("entry_point_pass"));
  }
}

TEST_CASE("library_lease: a plugin registering from its own thread during dlopen owns the entry",
          "[plugin][library_lease]") {
  reset_events();
  for (int round = 1; round <= 5; ++round) {
    keel::library_lease lease = loader().acquire(threaded_path);
    auto owner = passes().owner("threaded_pass");
    REQUIRE(owner);
    CHECK_FALSE(owner->host);
    CHECK(owner->library == canonical(threaded_path));
    CHECK(passes().staged() == 0);
    CHECK(lease.release() == release_result::unloaded);
    CHECK_FALSE(passes().contains("threaded_pass"));
  }
}

TEST_CASE("registry: a registry first created inside dlopen still stages and follows the plugin",
          "[plugin][registry]") {
  // Nothing in the host touches late_passes(): the plugin's registration
  // constructs it, after the load has begun, and it must join the load.
  REQUIRE_FALSE(late_passes_exists());
  for (int round = 0; round < 3; ++round) {
    keel::library_lease lease = loader().acquire(late_registry_path);
    REQUIRE(late_passes_exists());
    auto owner = late_passes().owner("late_pass");
    REQUIRE(owner);
    CHECK(owner->library == canonical(late_registry_path));
    CHECK(late_passes().staged() == 0);
    CHECK(lease.release() == release_result::unloaded);
    CHECK_FALSE(late_passes().contains("late_pass"));
  }
}
