// SPDX-License-Identifier: Apache-2.0
// Problem 3 of keel's design notes: a compiler loads custom pass plugins that
// register passes from static constructors. A single-op compile and a graph
// session each lease the same plugin; the single-op compile finishes first,
// and the graph session's passes keep running until it, too, is done. Only
// then is the plugin finalised, its passes removed and the library unloaded.
//
// Runs without arguments: the build passes the test pass plugin's path.
#include <cstdio>
#include <string>

#include "keel/plugin.hpp"
#include "pass_api.hpp"  // keel_test::passes(): the host's pass registry the plugin registers into

namespace {

const char* const pass_plugin = KEEL_TEST_PASSES_PATH;

// Compiles one operator: leases the plugin for as long as the compile lasts.
class single_op_compile {
 public:
  single_op_compile() : lease_(keel::library_loader::global().acquire(pass_plugin)) {}
  int compile(int value) {
    keel_test::graph g{value, {}};
    keel_test::passes().run("fold_constants", g);
    return g.value;
  }

 private:
  keel::library_lease lease_;  // the first user loads, the last unloads
};

// Runs whole graphs through every registered pass, for as long as it lives.
class graph_session {
 public:
  graph_session() : lease_(keel::library_loader::global().acquire(pass_plugin)) {}
  keel_test::graph execute(int value) const {
    keel_test::graph g{value, {}};
    keel_test::passes().for_each([&](std::string_view, const keel_test::pass& p) { p(g); });
    return g;
  }
  keel::release_result close() { return lease_.release(); }

 private:
  keel::library_lease lease_;
};

const char* describe(keel::release_result r) {
  switch (r) {
    case keel::release_result::empty: return "nothing held";
    case keel::release_result::shared: return "still leased by someone else";
    case keel::release_result::unloaded: return "finalised and unloaded from the process";
    case keel::release_result::still_mapped: return "finalised; the OS kept the library mapped";
  }
  return "?";
}

}  // namespace

int main() {
  try {
    graph_session session;
    std::printf("graph session leased the plugin: %zu passes registered\n", keel_test::passes().size());
    {
      single_op_compile single_op;
      std::printf("single-op compile: fold_constants(21) = %d, leases on the plugin: %zu\n", single_op.compile(21),
                  keel::library_loader::global().use_count(pass_plugin));
    }  // the single-op compile is done: its lease goes, the plugin stays
    std::printf("single-op compile finished; plugin still mapped: %s\n",
                keel::library_loader::is_mapped(pass_plugin) ? "yes" : "no");

    keel_test::graph g = session.execute(3);
    std::printf("graph session still runs its passes:");
    for (const auto& name : g.log) std::printf(" %s", name.c_str());
    std::printf(" -> %d\n", g.value);

    const keel::release_result r = session.close();
    std::printf("graph session closed: %s; passes left: %zu; mapped: %s\n", describe(r), keel_test::passes().size(),
                keel::library_loader::is_mapped(pass_plugin) ? "yes" : "no");
    return g.log.size() == 2 && r == keel::release_result::unloaded && keel_test::passes().size() == 0 ? 0 : 1;
  } catch (const keel::error& e) {
    std::fprintf(stderr, "plugin_leases: %s\n", e.what());
    return 1;
  }
}
