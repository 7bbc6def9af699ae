// SPDX-License-Identifier: Apache-2.0
// Task groups and updates: what only the host backend has. The suite every
// backend runs is keel/testing/conformance/task_group.hpp.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support.hpp"

using keel::errc;

using fixture = keel::testing::group_fixture<host>;

// Host only: the last section drives the host backend directly.
TEST_CASE("task_group: the model and the group handle may go while an update is open - host only",
          "[runtime][task_group][host]") {
  // The updating stream holds the group through its claim alone: the group
  // outlives its last reference until the update ends, then goes (ASan and
  // TSan runs check that it goes exactly once).
  fixture f;
  f.capture(1.0f);
  SECTION("end refuses") {
    keel::host::update_scope update{f.u, f.group};
    host::axpy(f.u, &f.out, &f.tmp, &f.other, 3.0f);
    f.model.reset();
    f.group.reset();
    KEEL_REQUIRE_ERROR(update.end(), errc::invalid_state, "was destroyed");
  }
  SECTION("abandoned") {
    keel::host::update_scope update{f.u, f.group};
    host::axpy(f.u, &f.out, &f.tmp, &f.other, 3.0f);
    f.model.reset();
    f.group.reset();
    update.cancel();
  }
  SECTION("the update stream is destroyed") {
    // Through the backend: a scope must not outlive its stream, but a
    // stream destroyed mid-update abandons the update itself.
    auto side = std::make_unique<keel::host::stream>(keel_test::test_device());
    keel::host::backend::update_begin(keel::detail::handle_of(*side), keel::detail::handle_of(f.group));
    host::axpy(*side, &f.out, &f.tmp, &f.other, 3.0f);
    CHECK(side->capture_status().updating);
    f.model.reset();
    f.group.reset();
    side.reset();
  }
  SECTION("a swap still pending when they go") {
    keel::host::event gate{keel_test::test_device(), keel::event_flags::external};
    f.u.wait(gate);  // busy: the update's swap is enqueued, and keeps the group alive
    {
      keel::host::update_scope update{f.u, f.group};
      host::axpy(f.u, &f.out, &f.tmp, &f.other, 3.0f);
      update.end();
    }
    f.model.reset();
    f.group.reset();
    gate.record(f.s);
    f.u.synchronize();
  }
  CHECK_FALSE(f.u.capture_status().updating);
}
