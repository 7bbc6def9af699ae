// SPDX-License-Identifier: Apache-2.0
// Scope guards roll back a half-done initialisation; guarded<T, Policy> keeps
// a table that many threads read and one updates; the checked policy turns a
// re-entrant lock (a self-deadlock) into an error you can read.
#include <keel/keel.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace {

// Registers three passes; the third fails, and every registration made so far
// is rolled back by its scope_fail guard: nothing half-registered is left.
void register_passes(keel::guarded<std::map<std::string, int>>& registry) {
  for (const char* name : {"fuse_add", "fold_cast", "broken_pass"}) {
    registry.write([&](auto& table) { table.emplace(name, 0); });
    keel::scope_fail unregister{[&registry, name] { registry.write([&](auto& table) { table.erase(name); }); }};
    if (std::string(name) == "broken_pass") {
      throw keel::error(keel::errc::invalid_parameter, "register_passes", "pass 'broken_pass' has no body");
    }
    unregister.dismiss();  // registered for good; undoing the batch is the caller's guard's job
  }
}

}  // namespace

int main() {
  // 1. Rollback with guards.
  keel::guarded<std::map<std::string, int>> registry;
  bool rolled_back = false;
  try {
    KEEL_SCOPE_FAIL {  // undo the whole batch if any step fails
      registry.write([](auto& table) { table.clear(); });
    };
    register_passes(registry);
  } catch (const keel::error& e) {
    std::printf("deliberate failure, to show the rollback: registration failed: %s\n", e.what());
    rolled_back = registry.read([](const auto& t) { return t.empty(); });
  }
  std::printf("passes left registered after the failure: %zu (the scope guard undid the batch)\n",
              registry.read([](const auto& t) { return t.size(); }));

  // 2. Many readers, one writer, through the std policy.
  keel::guarded<std::vector<int>, keel::std_shared_mutex_policy> counts{std::vector<int>(4, 0)};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&counts, t] {
      for (int i = 0; i < 1000; ++i) counts.write([t](std::vector<int>& c) { ++c[static_cast<std::size_t>(t)]; });
    });
  }
  for (auto& th : threads) th.join();
  const int total = counts.read([](const std::vector<int>& c) { return c[0] + c[1] + c[2] + c[3]; });
  std::printf("4 threads x 1000 updates under std_shared_mutex_policy: total = %d\n", total);

  // 3. A registry called back from inside its own lock: with the std policy
  // this hangs forever; the checked policy reports it.
  keel::guarded<int, keel::checked_mutex_policy> table{0};
  bool caught = false;
  try {
    table.read([&](int) { table.write([](int& v) { ++v; }); });
  } catch (const keel::error& e) {
    std::printf("deliberate self-deadlock, to show the checked policy: caught: %s\n", e.rule());
    caught = true;
  }
  return rolled_back && total == 4000 && caught ? 0 : 1;
}
