// SPDX-License-Identifier: Apache-2.0
// Fault injection in the plugin layer: a registration that throws halfway,
// and library files that are truncated, empty or not libraries, while
// another user holds a lease on a well-formed plugin and keeps running its
// passes. Every failure is the documented keel::error, leaves the registry
// and the loaded set as they were, and never unloads anything under a user.
#include <elf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "keel/plugin.hpp"
#include "pass_api.hpp"

namespace fs = std::filesystem;
using namespace keel_test;

namespace {

const std::string passes_path = KEEL_TEST_PASSES_PATH;
const std::string register_throws_path = KEEL_RELIABILITY_REGISTER_THROWS_PATH;

keel::library_loader& loader() { return keel::library_loader::global(); }

// A user of the pass plugin: holds a lease and runs its passes on a thread
// until stopped, counting runs and any run that found a pass missing.
class busy_user {
 public:
  busy_user() : lease_(loader().acquire(passes_path)) {
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        graph g;
        g.value = 1;
        try {
          passes().run("fold_constants", g);
          passes().run("eliminate_dead_code", g);
          if (g.value == 3) ++runs_;
          else ++wrong_;
        } catch (...) {
          ++wrong_;
        }
      }
    });
  }
  ~busy_user() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int runs() const { return runs_; }
  // Waits (at most 10 s: a loaded machine may not schedule the thread soon)
  // until the user ran its passes more than `than` times.
  bool ran_more_than(int than) const {
    for (int i = 0; i < 10000 && runs_ <= than; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return runs_ > than;
  }
  int wrong() const { return wrong_; }
  keel::library_lease& lease() { return lease_; }

 private:
  keel::library_lease lease_;
  std::atomic<bool> stop_{false};
  std::atomic<int> runs_{0}, wrong_{0};
  std::thread thread_;
};

struct snapshot {
  std::vector<std::string> loaded;
  std::vector<std::string> names;
  bool operator==(const snapshot& o) const { return loaded == o.loaded && names == o.names; }
};
snapshot take() { return {loader().loaded(), passes().names()}; }

void expect_load_failure(const std::string& path, const std::string& reason) {
  const snapshot before = take();
  try {
    (void)loader().acquire(path);
    FAIL("acquiring " << path << " succeeded");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::errc::library_load_failed);
    CHECK_THAT(e.what(), Catch::Contains(reason));
    CHECK_THAT(e.what(), Catch::Contains(fs::path(path).filename().string()));
  }
  CHECK(take() == before);
  CHECK(loader().use_count(path) == 0);
  CHECK_FALSE(keel::library_loader::is_mapped(path));
}

std::string scratch_file(const std::string& name, const std::string& bytes) {
  const fs::path p = fs::temp_directory_path() / ("keel_reliability_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

}  // namespace

TEST_CASE("fault: a plugin whose registration throws halfway is rolled back", "[reliability][fault][plugin]") {
  busy_user user;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int calls = events().register_calls;
    expect_load_failure(register_throws_path, "second pass needs a device");
    CHECK(events().register_calls == calls + 1);  // it ran, registered one pass, threw
    CHECK_FALSE(passes().contains("half_pass_first"));
  }
  CHECK(user.lease().use_count() == 1);
  CHECK(user.ran_more_than(user.runs()));  // the user's passes kept running throughout
  user.stop();
  CHECK(user.wrong() == 0);
  CHECK(user.lease().release() == keel::release_result::unloaded);
  CHECK_FALSE(keel::library_loader::is_mapped(passes_path));
}

TEST_CASE("fault: a library file that is truncated, empty or not a library", "[reliability][fault][plugin]") {
  std::ifstream in(passes_path, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(image.size() > 4096);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"truncated_header.so", image.substr(0, 40)},
      {"truncated_program_headers.so", image.substr(0, 100)},
      {"empty.so", std::string()},
      {"text.so", std::string("this is a text file, not an ELF shared object\n")},
      {"elf_magic_only.so", std::string("\x7f" "ELF", 4) + std::string(200, '\0')},
  };
  busy_user user;
  for (const auto& [name, bytes] : files) {
    INFO(name);
    const std::string path = scratch_file(name, bytes);
    expect_load_failure(path, "");
    fs::remove(path);
  }
  CHECK(user.ran_more_than(0));
  user.stop();
  CHECK(user.wrong() == 0);
  // The real library still loads and works after all that.
  CHECK(user.lease().use_count() == 1);
  keel::library_lease second = loader().acquire(passes_path);
  CHECK(second.use_count() == 2);
  graph g;
  passes().run("fold_constants", g);
  CHECK(g.log == std::vector<std::string>{"fold_constants"});
}

// A file cut inside its loadable segments passes dlopen's header checks; the
// loader would map the segments past the end of the file, and the first touch
// of those pages (relocation) raises SIGBUS. The loader checks the segments
// first and fails with library_load_failed. Run in a child process so that a
// regression reports instead of crashing the test binary.
TEST_CASE("fault: a library truncated inside its loadable segments fails to load",
          "[reliability][fault][plugin]") {
  std::ifstream in(passes_path, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  REQUIRE(image.size() > sizeof eh);
  std::memcpy(&eh, image.data(), sizeof eh);
  std::size_t loaded_end = 0;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, image.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD) loaded_end = std::max<std::size_t>(loaded_end, ph.p_offset + ph.p_filesz);
  }
  const std::size_t headers_end = eh.e_phoff + eh.e_phnum * sizeof(Elf64_Phdr);
  REQUIRE(loaded_end > headers_end + 4096);
  const std::string path = scratch_file("truncated_in_segments.so", image.substr(0, headers_end + 4096));
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int status = 4;  // loaded
    try {
      (void)loader().acquire(path);
    } catch (const keel::error& e) {
      status = e.code() == keel::errc::library_load_failed ? 0 : 2;
    } catch (...) {
      status = 3;
    }
    ::_exit(status);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  fs::remove(path);
  INFO("child " << (WIFSIGNALED(status) ? "died of signal " + std::to_string(WTERMSIG(status))
                                        : "exited with " + std::to_string(WEXITSTATUS(status))));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// Threads acquire a library whose load fails: the loading thread erases the
// library's record on failure while the others wait for that load; they must
// look the record up again rather than use the erased one (a use-after-free
// the soak found, caught here by ASan).
TEST_CASE("fault: concurrent acquisitions of a library whose load fails", "[reliability][fault][plugin]") {
  events().init_throws = true;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        try {
          (void)loader().acquire(std::string(KEEL_TEST_INIT_FAILS_PATH));
          ++wrong;
        } catch (const keel::error& e) {
          if (e.code() != keel::errc::library_load_failed) ++wrong;
        }
      }
    });
  for (auto& t : threads) t.join();
  events().init_throws = false;
  CHECK(wrong == 0);
}
