// SPDX-License-Identifier: Apache-2.0
// The ACL function table: resolution by name from any resolver, missing
// functions reported as not_supported on first call (never at resolve time),
// per-library resolution, and the dlopen/dlsym path against a stand-in runtime.
#include <catch2/catch.hpp>

#include <keel/acl/api.hpp>
#include <keel/acl/status.hpp>

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

int stream_storage = 0;
int created = 0;

keel::acl::status fake_create_stream(keel::acl::stream_handle* stream) {
  ++created;
  *stream = &stream_storage;
  return 0;
}

keel::acl::status fake_malloc(void** pointer, std::size_t size, keel::acl::malloc_policy policy) {
  *pointer = nullptr;
  return size == 0 || policy != keel::acl::malloc_policy::huge_first ? 100000 : 207001;
}

template <class Function>
void* as_symbol(Function* function) {
  void* symbol = nullptr;
  std::memcpy(&symbol, &function, sizeof symbol);
  return symbol;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void require_not_supported(const keel::error& e, const char* function) {
  CHECK(e.code() == keel::errc::not_supported);
  CHECK(std::string(e.api()) == function);
  CHECK(std::string(e.rule()) == "not supported by this runtime (CANN too old?)");
  CHECK(contains(e.what(), function));
}

}  // namespace

TEST_CASE("api: an unresolved table has every entry missing, named", "[acl][api]") {
  const keel::acl::api table;
  CHECK(table.missing().size() == keel::acl::api::size());
  CHECK_FALSE(table.aclmdlRICaptureTaskGrpBegin);
  CHECK(std::string(table.aclmdlRICaptureTaskGrpBegin.name()) == "aclmdlRICaptureTaskGrpBegin");
  CHECK(table.aclrtCreateStream.get() == nullptr);
  try {
    (void)table.aclmdlRICaptureTaskGrpBegin(nullptr);
    FAIL("calling a missing function did not throw");
  } catch (const keel::error& e) {
    require_not_supported(e, "aclmdlRICaptureTaskGrpBegin");
  }
}

TEST_CASE("api: resolve() fills present functions and leaves missing ones for their first call", "[acl][api]") {
  std::vector<std::string> asked;
  const std::map<std::string, void*> exported = {
      {"aclrtCreateStream", as_symbol(&fake_create_stream)},
      {"aclrtMalloc", as_symbol(&fake_malloc)},
  };
  const auto resolver = [&](const char* name) -> void* {
    asked.emplace_back(name);
    const auto found = exported.find(name);
    return found == exported.end() ? nullptr : found->second;
  };

  const keel::acl::api table = keel::acl::api::resolve(resolver);  // no throw: missing is fine here

  SECTION("every function is asked for once, by its ACL name, in table order") {
    REQUIRE(asked.size() == keel::acl::api::size());
    for (std::size_t i = 0; i < asked.size(); ++i) CHECK(asked[i] == keel::acl::functions[i].name);
  }
  SECTION("present functions call through") {
    REQUIRE(table.aclrtCreateStream);
    CHECK(table.aclrtCreateStream.get() == &fake_create_stream);
    keel::acl::stream_handle stream = nullptr;
    const int before = created;
    CHECK(table.aclrtCreateStream(&stream) == 0);
    CHECK(stream == &stream_storage);
    CHECK(created == before + 1);
    void* pointer = &stream_storage;
    CHECK(table.aclrtMalloc(&pointer, 64, keel::acl::malloc_policy::huge_first) == 207001);
    CHECK(pointer == nullptr);
  }
  SECTION("missing functions are listed, and throw not_supported naming themselves when called") {
    const auto missing = table.missing();
    CHECK(missing.size() == keel::acl::api::size() - 2);
    CHECK(std::string(missing.front()) == "aclInit");
    try {
      (void)table.aclmdlRICaptureBegin(nullptr, keel::acl::capture_mode::global);
      FAIL("calling a missing function did not throw");
    } catch (const keel::error& e) {
      require_not_supported(e, "aclmdlRICaptureBegin");
    }
    try {
      (void)table.aclnnBaddbmmGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, nullptr,
                                               nullptr);
      FAIL("calling a missing function did not throw");
    } catch (const keel::error& e) {
      require_not_supported(e, "aclnnBaddbmmGetWorkspaceSize");
    }
  }
}

TEST_CASE("api: a per-library resolver is asked in each function's own library", "[acl][api]") {
  std::map<std::string, keel::acl::library> asked;
  const auto table = keel::acl::api::resolve([&](keel::acl::library lib, const char* name) -> void* {
    asked.emplace(name, lib);
    return lib == keel::acl::library::ascendcl && std::string(name) == "aclrtCreateStream"
               ? as_symbol(&fake_create_stream)
               : nullptr;
  });
  REQUIRE(asked.size() == keel::acl::api::size());
  CHECK(asked.at("aclrtMemcpyAsync") == keel::acl::library::ascendcl);
  CHECK(asked.at("aclmdlRICaptureTaskUpdateEnd") == keel::acl::library::ascendcl);
  CHECK(asked.at("aclCreateTensor") == keel::acl::library::nnopbase);
  CHECK(asked.at("aclDestroyAclOpExecutor") == keel::acl::library::nnopbase);
  CHECK(asked.at("aclnnAdd") == keel::acl::library::opapi);
  CHECK(asked.at("aclnnCastGetWorkspaceSize") == keel::acl::library::opapi);
  CHECK(table.aclrtCreateStream);
  CHECK(table.missing().size() == keel::acl::api::size() - 1);
}

TEST_CASE("api: resolved through dlsym from a loaded runtime library", "[acl][api]") {
  void* handle = dlopen(KEEL_ACL_TEST_FAKE_RUNTIME, RTLD_NOW | RTLD_LOCAL);
  INFO((handle == nullptr ? dlerror() : "loaded"));
  REQUIRE(handle != nullptr);
  {
    const auto api = keel::acl::api::resolve([handle](const char* name) { return dlsym(handle, name); });
    CHECK(api.aclrtCreateStream);
    CHECK(api.aclrtSynchronizeStream);
    CHECK(api.aclGetRecentErrMsg);
    CHECK(api.missing().size() == keel::acl::api::size() - 3);

    keel::acl::stream_handle stream = nullptr;
    CHECK_NOTHROW(keel::acl::check(api.aclrtCreateStream(&stream), "aclrtCreateStream", api.aclGetRecentErrMsg));
    CHECK(stream != nullptr);

    SECTION("a failing call becomes keel::error with the runtime's own message") {
      try {
        keel::acl::check(api.aclrtSynchronizeStream(stream), "aclrtSynchronizeStream", api.aclGetRecentErrMsg);
        FAIL("check() did not throw");
      } catch (const keel::error& e) {
        CHECK(e.code() == keel::acl::errc::rt_stream_sync_timeout);
        CHECK(e.code() == keel::acl::condition(keel::errc::timeout));
        CHECK(std::string(e.api()) == "aclrtSynchronizeStream");
        CHECK(contains(e.rule(), "fake runtime: the stream did not finish in time"));
        CHECK(contains(e.what(), "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT"));
      }
    }
    SECTION("a function the runtime lacks throws not_supported when used") {
      void* memory = nullptr;
      try {
        (void)api.aclrtMalloc(&memory, 16, keel::acl::malloc_policy::huge_first);
        FAIL("calling a missing function did not throw");
      } catch (const keel::error& e) {
        require_not_supported(e, "aclrtMalloc");
      }
    }
    SECTION("a runtime without aclGetRecentErrMsg still reports the status") {
      const keel::acl::api old_runtime;  // nothing resolved, aclGetRecentErrMsg included
      try {
        keel::acl::check(api.aclrtSynchronizeStream(stream), "aclrtSynchronizeStream",
                         old_runtime.aclGetRecentErrMsg);
        FAIL("check() did not throw");
      } catch (const keel::error& e) {
        CHECK(e.code() == keel::acl::errc::rt_stream_sync_timeout);
        CHECK(std::string(e.rule()) == "status 507046");
      }
    }
  }
  CHECK(dlclose(handle) == 0);
}
