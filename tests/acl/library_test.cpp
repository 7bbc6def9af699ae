// SPDX-License-Identifier: Apache-2.0
// Where the ACL libraries are looked for: explicit directory, CANN's
// environment (ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME), then the loader's
// search path.
#include <catch2/catch.hpp>

#include <keel/acl/library.hpp>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

std::map<std::string, std::string>& fake_environment() {
  static std::map<std::string, std::string> variables;
  return variables;
}

const char* fake_getenv(const char* name) {
  const auto found = fake_environment().find(name);
  return found == fake_environment().end() ? nullptr : found->second.c_str();
}

using paths = std::vector<std::string>;

// Sets (or unsets) a process environment variable for one scope.
class scoped_environment {
 public:
  scoped_environment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~scoped_environment() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  scoped_environment(const scoped_environment&) = delete;
  scoped_environment& operator=(const scoped_environment&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("library: each part of the ACL subset has its CANN soname", "[acl][library]") {
  CHECK(std::string(keel::acl::soname(keel::acl::library::ascendcl)) == "libascendcl.so");
  CHECK(std::string(keel::acl::soname(keel::acl::library::nnopbase)) == "libnnopbase.so");
  CHECK(std::string(keel::acl::soname(keel::acl::library::opapi)) == "libopapi.so");
}

TEST_CASE("library: candidates follow explicit directory, then CANN's environment, then the loader",
          "[acl][library]") {
  using keel::acl::library;
  using keel::acl::library_candidates;
  auto& env = fake_environment();
  env.clear();

  SECTION("nothing set: the soname alone, for LD_LIBRARY_PATH") {
    CHECK(library_candidates(library::ascendcl, {}, &fake_getenv) == paths{"libascendcl.so"});
  }
  SECTION("ASCEND_HOME_PATH first, then the loader") {
    env["ASCEND_HOME_PATH"] = "/usr/local/Ascend/ascend-toolkit/latest";
    CHECK(library_candidates(library::opapi, {}, &fake_getenv) ==
          paths{"/usr/local/Ascend/ascend-toolkit/latest/lib64/libopapi.so", "libopapi.so"});
  }
  SECTION("ASCEND_TOOLKIT_HOME when ASCEND_HOME_PATH is unset or empty") {
    env["ASCEND_TOOLKIT_HOME"] = "/opt/cann/";
    CHECK(library_candidates(library::nnopbase, {}, &fake_getenv) ==
          paths{"/opt/cann/lib64/libnnopbase.so", "libnnopbase.so"});
    env["ASCEND_HOME_PATH"] = "";
    CHECK(library_candidates(library::nnopbase, {}, &fake_getenv) ==
          paths{"/opt/cann/lib64/libnnopbase.so", "libnnopbase.so"});
  }
  SECTION("both set to different roots: ASCEND_HOME_PATH, ASCEND_TOOLKIT_HOME, loader") {
    env["ASCEND_HOME_PATH"] = "/a";
    env["ASCEND_TOOLKIT_HOME"] = "/b";
    CHECK(library_candidates(library::ascendcl, {}, &fake_getenv) ==
          paths{"/a/lib64/libascendcl.so", "/b/lib64/libascendcl.so", "libascendcl.so"});
  }
  SECTION("both set to the same root (as set_env.sh does): listed once") {
    env["ASCEND_HOME_PATH"] = "/usr/local/Ascend/cann";
    env["ASCEND_TOOLKIT_HOME"] = "/usr/local/Ascend/cann/";
    CHECK(library_candidates(library::ascendcl, {}, &fake_getenv) ==
          paths{"/usr/local/Ascend/cann/lib64/libascendcl.so", "libascendcl.so"});
  }
  SECTION("an explicit directory is the only candidate, whatever the environment says") {
    env["ASCEND_HOME_PATH"] = "/a";
    env["ASCEND_TOOLKIT_HOME"] = "/b";
    CHECK(library_candidates(library::opapi, "/work/emulation/lib", &fake_getenv) ==
          paths{"/work/emulation/lib/libopapi.so"});
    CHECK(library_candidates(library::opapi, "/work/emulation/lib/", &fake_getenv) ==
          paths{"/work/emulation/lib/libopapi.so"});
  }
  env.clear();
}

TEST_CASE("library: by default the process environment is read", "[acl][library]") {
  const scoped_environment home("ASCEND_HOME_PATH", "/srv/cann/latest");
  const scoped_environment toolkit("ASCEND_TOOLKIT_HOME", nullptr);
  CHECK(keel::acl::library_candidates(keel::acl::library::ascendcl) ==
        paths{"/srv/cann/latest/lib64/libascendcl.so", "libascendcl.so"});
  {
    const scoped_environment unset_home("ASCEND_HOME_PATH", nullptr);
    CHECK(keel::acl::library_candidates(keel::acl::library::ascendcl) == paths{"libascendcl.so"});
  }
}
