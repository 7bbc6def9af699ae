// SPDX-License-Identifier: Apache-2.0
// library_lease and library_loader: counting, identity, imports, and the
// rollback of every failure.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <string>
#include <vector>

#include "keel/plugin.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using keel::release_result;
using namespace keel_test;

namespace {

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

// Everything a failed acquisition must leave as it was.
struct snapshot {
  std::vector<std::string> loaded;
  std::vector<std::string> names;
  std::size_t staged;
  bool operator==(const snapshot& o) const { return loaded == o.loaded && names == o.names && staged == o.staged; }
};
snapshot take_snapshot() { return {loader().loaded(), passes().names(), passes().staged()}; }

}  // namespace

TEST_CASE("library_lease: the first lease loads and initialises, the last finalises and unloads",
          "[plugin][library_lease]") {
  reset_events();
  REQUIRE_FALSE(keel::library_loader::is_mapped(passes_path));

  keel::library_lease first = loader().acquire(passes_path);
  CHECK(first);
  CHECK(first.path() == canonical(passes_path));
  CHECK(first.use_count() == 1);
  CHECK(events().constructions == 1);
  CHECK(events().inits == 1);
  CHECK(passes().contains("fold_constants"));
  CHECK(passes().contains("eliminate_dead_code"));
  auto owner = passes().owner("fold_constants");
  REQUIRE(owner);
  CHECK_FALSE(owner->host);
  CHECK(owner->library == canonical(passes_path));
  CHECK(contains(loader().loaded(), canonical(passes_path)));

  keel::library_lease copy = first;            // another holder
  keel::library_lease again = loader().acquire(passes_path);  // another user
  CHECK(first.use_count() == 3);
  CHECK(loader().use_count(passes_path) == 3);
  CHECK(copy == first);
  CHECK(again == first);
  CHECK(events().inits == 1);

  CHECK(copy.release() == release_result::shared);
  CHECK(again.release() == release_result::shared);
  CHECK(events().finis == 0);
  CHECK(passes().contains("fold_constants"));

  CHECK(first.release() == release_result::unloaded);
  CHECK_FALSE(first);
  CHECK(first.release() == release_result::empty);
  CHECK(events().finis == 1);
  CHECK_FALSE(passes().contains("fold_constants"));
  CHECK_FALSE(passes().contains("eliminate_dead_code"));
  CHECK_FALSE(keel::library_loader::is_mapped(passes_path));
  CHECK_FALSE(contains(loader().loaded(), canonical(passes_path)));
  CHECK(loader().use_count(passes_path) == 0);
  CHECK(events().runs_after_fini == 0);
}

TEST_CASE("library_lease: two spellings of one library are one library", "[plugin][library_lease]") {
  reset_events();
  const fs::path dir = fs::temp_directory_path() / ("keel_lease_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "sub");
  const fs::path link = dir / "link_to_passes.so";
  fs::remove(link);
  fs::create_symlink(canonical(passes_path), link);
  const fs::path dotted = fs::path(passes_path).parent_path() / "." / fs::path(passes_path).filename();

  {
    keel::library_lease by_link = loader().acquire(link);
    keel::library_lease by_dots = loader().acquire(dotted);
    keel::library_lease by_path = loader().acquire(passes_path);
    CHECK(by_link == by_path);
    CHECK(by_dots == by_path);
    CHECK(by_path.use_count() == 3);
    CHECK(by_link.path() == canonical(passes_path));
    CHECK(events().inits == 1);
    CHECK(events().constructions == 1);
  }
  CHECK(events().finis == 1);
  CHECK_FALSE(keel::library_loader::is_mapped(passes_path));

  // A known spelling is not looked up on the file system again while the
  // library is loaded (the benchmarked fast path), and is forgotten once it
  // is unloaded, so a changed file system is seen by the next load.
  {
    keel::library_lease lease = loader().acquire(link);
    fs::remove(link);
    keel::library_lease again = loader().acquire(link);
    CHECK(again == lease);
  }
  CHECK_THROWS_AS(loader().acquire(link), keel::error);
  fs::remove_all(dir);
}

TEST_CASE("library_lease: an imported symbol keeps the lease alive", "[plugin][library_lease]") {
  reset_events();
  keel::imported<int(int)> answer;
  keel::imported<int> version;
  {
    keel::library_lease lease = loader().acquire(passes_path);
    answer = lease.import<int(int)>("keel_test_answer");
    version = lease.import<int>("keel_test_version");
    CHECK(lease.use_count() == 3);
    CHECK(lease.release() == release_result::shared);
  }
  CHECK(events().finis == 0);
  CHECK(answer(2) == 42);
  CHECK(*version == 7);
  CHECK(passes().contains("fold_constants"));
  version = {};
  CHECK(answer.lease().use_count() == 1);
  answer = {};
  CHECK_FALSE(answer);
  CHECK(events().finis == 1);
  CHECK_FALSE(keel::library_loader::is_mapped(passes_path));
  CHECK_FALSE(passes().contains("fold_constants"));
}

TEST_CASE("library_lease: importing a missing symbol names the library and the symbol", "[plugin][library_lease]") {
  keel::library_lease lease = loader().acquire(plain_path);
  try {
    (void)lease.import<int(int, int)>("no_such_symbol");
    FAIL("import of a missing symbol succeeded");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::errc::symbol_not_found);
    CHECK_THAT(e.what(), Catch::Contains(canonical(plain_path)) && Catch::Contains("no_such_symbol"));
  }
  CHECK(lease.import<int(int, int)>("keel_plain_add")(2, 3) == 5);
  keel::library_lease empty;
  CHECK_THROWS_MATCHES(empty.import<int(int, int)>("keel_plain_add"), keel::error,
                       Catch::Predicate<keel::error>([](const keel::error& e) {
                         return e.code() == keel::errc::invalid_handle;
                       }));
}

TEST_CASE("library_lease: every failed acquisition leaves count, registry and loaded set as before",
          "[plugin][library_lease]") {
  reset_events();
  // Something already loaded and registered, so "as before" is not "empty".
  keel::library_lease held = loader().acquire(plain_path);
  passes().add("host_pass", [](graph& g) { g.log.push_back("host_pass"); });
  const snapshot before = take_snapshot();

  auto expect_failure = [&](const std::string& path, keel::errc code, const std::string& reason,
                            keel::load_options options = {}) {
    try {
      (void)loader().acquire(path, options);
      FAIL("acquiring " << path << " succeeded");
    } catch (const keel::error& e) {
      CHECK(e.code() == code);
      CHECK_THAT(e.what(), Catch::Contains(reason));
      CHECK_THAT(e.what(), Catch::Contains(fs::path(path).filename().string()));
    }
    CHECK(take_snapshot() == before);
    CHECK(loader().use_count(path) == 0);
    CHECK(held.use_count() == 1);
    CHECK_FALSE(keel::library_loader::is_mapped(path));
  };

  SECTION("a file that does not exist") {
    expect_failure(passes_path + ".missing", keel::errc::library_load_failed, "cannot resolve the path");
  }
  SECTION("a file that is not a library") {
    expect_failure(not_a_library_path, keel::errc::library_load_failed, "not a loadable library");
  }
  SECTION("a missing entry point") {
    keel::load_options options;
    options.require_init = true;
    expect_failure(no_entry_path, keel::errc::symbol_not_found, "keel_plugin_init", options);
    CHECK_FALSE(passes().contains("orphan_pass"));
  }
  SECTION("an initialisation that reports failure") {
    events().init_status = 3;
    expect_failure(init_fails_path, keel::errc::library_load_failed, "keel_plugin_init reported failure (3)");
    CHECK(events().inits == 1);
    CHECK(events().finis == 0);  // init failed: nothing to finalise
    // The rollback left a clean slate: the next attempt works.
    events().init_status = 0;
    keel::library_lease lease = loader().acquire(init_fails_path);
    CHECK(passes().contains("doomed_pass"));
    CHECK(lease.release() == release_result::unloaded);
  }
  SECTION("an initialisation that throws") {
    events().init_throws = true;
    expect_failure(init_fails_path, keel::errc::library_load_failed, "device not found");
    CHECK_FALSE(passes().contains("doomed_pass"));
  }
  SECTION("a registration whose name is taken") {
    passes().add("fold_constants", [](graph&) {});
    const snapshot with_clash = take_snapshot();
    try {
      (void)loader().acquire(passes_path);
      FAIL("a clashing plugin was loaded");
    } catch (const keel::error& e) {
      CHECK(e.code() == keel::errc::invalid_parameter);
      CHECK_THAT(e.what(), Catch::Contains("fold_constants"));
    }
    CHECK(take_snapshot() == with_clash);
    CHECK(passes().owner("fold_constants")->host);
    CHECK(events().inits == 1);
    CHECK(events().finis == 1);  // init had succeeded: the rollback finalised
    CHECK_FALSE(keel::library_loader::is_mapped(passes_path));
    passes().remove("fold_constants");
  }
  CHECK(passes().remove("host_pass"));
}

TEST_CASE("library_lease: a FIFO, a socket, a device or a directory is library_load_failed before anything opens it",
          "[plugin][library_lease]") {
  const fs::path dir = fs::temp_directory_path() / ("keel_lease_special_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "plugin_dir.so");
  const fs::path fifo = dir / "fifo.so";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const fs::path socket_path = dir / "socket.so";
  const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(sock >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(socket_path.native().size() < sizeof address.sun_path);
  std::strcpy(address.sun_path, socket_path.c_str());
  REQUIRE(::bind(sock, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  const std::vector<std::string> loaded_before = loader().loaded();

  auto expect_refused = [&](const fs::path& path, const std::string& kind) {
    INFO(path.string());
    // Opening the FIFO blocks until a writer comes: acquire on a worker, and
    // if it is still waiting after a few seconds, play the writer (open and
    // close) until it returns, so the test fails instead of hanging.
    auto attempt = std::async(std::launch::async, [&]() -> std::string {
      try {
        (void)loader().acquire(path);
        return "acquired";
      } catch (const keel::error& e) {
        return std::string(e.code() == keel::errc::library_load_failed ? "library_load_failed: " : "other: ") +
               e.what();
      }
    });
    bool blocked = false;
    if (attempt.wait_for(std::chrono::seconds(5)) != std::future_status::ready) {
      blocked = true;
      while (attempt.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
        const int fd = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
        if (fd >= 0) ::close(fd);
      }
    }
    const std::string outcome = attempt.get();
    INFO(outcome);
    CHECK_FALSE(blocked);
    CHECK(outcome.rfind("library_load_failed: ", 0) == 0);
    CHECK_THAT(outcome, Catch::Contains("not a regular file (" + kind + ")"));
    CHECK_THAT(outcome, Catch::Contains(fs::canonical(path).string()));
    CHECK(loader().loaded() == loaded_before);
    CHECK(loader().use_count(path.string()) == 0);
  };
  expect_refused(fifo, "a FIFO");
  expect_refused(socket_path, "a socket");
  expect_refused(dir / "plugin_dir.so", "a directory");
  expect_refused("/dev/null", "a character device");
  ::close(sock);
  fs::remove_all(dir);
}

TEST_CASE("library_lease: a failing finalisation goes to the error handler", "[plugin][library_lease]") {
  reset_events();
  captured_reports reports;
  events().fini_status = 5;
  {
    keel::library_lease lease = loader().acquire(passes_path);
  }  // the destructor must not throw
  auto got = reports.take();
  REQUIRE(got.size() == 1);
  CHECK(got[0].api == "library_lease::release");
  CHECK(got[0].code == keel::errc::library_load_failed);
  CHECK_THAT(got[0].message, Catch::Contains(canonical(passes_path)) && Catch::Contains("(5)"));
  CHECK_FALSE(passes().contains("fold_constants"));
  CHECK_FALSE(keel::library_loader::is_mapped(passes_path));
}

TEST_CASE("library_lease: moves and swaps exchange every field", "[plugin][library_lease]") {
  reset_events();
  keel::library_lease empty;
  CHECK_FALSE(empty);
  CHECK(empty.use_count() == 0);

  keel::library_lease a = loader().acquire(plain_path);
  keel::library_lease b = loader().acquire(passes_path);
  const std::string plain = a.path();
  const std::string pass_lib = b.path();

  keel::library_lease moved(std::move(a));
  CHECK_FALSE(a);  // NOLINT(bugprone-use-after-move): checking the moved-from state is the point
  CHECK(moved.path() == plain);
  CHECK(moved.use_count() == 1);

  swap(moved, b);
  CHECK(moved.path() == pass_lib);
  CHECK(b.path() == plain);

  auto& alias = moved;
  moved = std::move(alias);  // self-move keeps the lease
  CHECK(moved.path() == pass_lib);
  CHECK(moved.use_count() == 1);

  moved = std::move(b);  // releases the passes library, takes the plain one
  CHECK_FALSE(b);        // NOLINT(bugprone-use-after-move)
  CHECK(moved.path() == plain);
  CHECK(events().finis == 1);
  CHECK_FALSE(keel::library_loader::is_mapped(passes_path));

  keel::library_lease copy;
  copy = moved;
  CHECK(copy.use_count() == 2);
  copy = keel::library_lease{};
  CHECK(moved.use_count() == 1);
  CHECK(moved.release() == release_result::unloaded);
  CHECK_FALSE(keel::library_loader::is_mapped(plain_path));
}
