// SPDX-License-Identifier: Apache-2.0
// The bug keel's plugin part exists to remove: one user of a pass plugin
// finishing must not unload it under another user that still runs its passes.
#include <dlfcn.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "keel/plugin.hpp"
#include "support.hpp"

using keel::release_result;
using namespace keel_test;

namespace {

// A single-op compile: leases the pass plugin, runs one pass, finishes.
class single_op_compile {
 public:
  single_op_compile() : lease_(keel::library_loader::global().acquire(passes_path)) {}
  int compile(int value) {
    graph g{value, {}};
    passes().run("fold_constants", g);
    return g.value;
  }
  release_result finish() { return lease_.release(); }

 private:
  keel::library_lease lease_;
};

// A graph session: leases the same plugin and runs every registered pass on
// each graph it executes, for as long as it lives.
class graph_session {
 public:
  graph_session() : lease_(keel::library_loader::global().acquire(passes_path)) {}
  graph execute(int value) const {
    graph g{value, {}};
    passes().for_each([&](std::string_view, const pass& p) { p(g); });
    return g;
  }
  release_result finish() { return lease_.release(); }

 private:
  keel::library_lease lease_;
};

}  // namespace

TEST_CASE("library_lease: a single-op compile finishing does not unload a graph session's passes",
          "[plugin][library_lease][scenario]") {
  reset_events();
  graph_session session;
  single_op_compile single_op;
  CHECK(single_op.compile(5) == 10);

  // The session keeps executing graphs on its own thread while the single-op
  // user finishes; every execution must see both passes.
  std::atomic<bool> stop{false};
  std::atomic<int> executions{0};
  std::atomic<int> incomplete{0};
  std::thread session_thread([&] {
    while (!stop.load() || executions.load() < 10) {
      graph g = session.execute(3);
      if (g.log.size() != 2 || g.value != 8) ++incomplete;  // (3 + 1) * 2: eliminate_dead_code, then fold_constants
      ++executions;
    }
  });
  CHECK(single_op.finish() == release_result::shared);
  stop = true;
  session_thread.join();
  CHECK(incomplete == 0);
  CHECK(executions >= 10);
  CHECK(events().finis == 0);

  graph after = session.execute(1);
  REQUIRE(after.log.size() == 2);
  CHECK(after.log[0] == "eliminate_dead_code");
  CHECK(after.log[1] == "fold_constants");
  CHECK(after.value == 4);

  CHECK(session.finish() == release_result::unloaded);
  // Really gone from the process, and so are its passes.
  void* handle = ::dlopen(passes_path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  CHECK(handle == nullptr);
  if (handle != nullptr) ::dlclose(handle);
  CHECK_FALSE(passes().contains("fold_constants"));
  CHECK_FALSE(passes().contains("eliminate_dead_code"));
  CHECK(passes().size() == 0);
  CHECK(events().finis == 1);
  CHECK(events().runs_after_fini == 0);
}
