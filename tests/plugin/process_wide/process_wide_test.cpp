// SPDX-License-Identifier: Apache-2.0
// keel's process-wide state stays process-wide across shared objects: a host
// and two plugins, all built with -fvisibility=hidden and the plugins loaded
// with RTLD_LOCAL, see one error category, one error handler, one library
// loader, one default device and one fence registration when all of them
// link keel::runtime, and a code thrown in a plugin equals keel::errc in the
// host with or without it (KEEL_TEST_PW_HEADER_ONLY: only that is built).
// KEEL_TEST_PW_MIXED_ABI: plugin A was built against another ABI namespace.
#include <catch2/catch.hpp>

#include <mutex>
#include <string>
#include <system_error>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/host/device.hpp"
#include "keel/core/asymmetric_fence.hpp"
#include "keel/plugin/library_lease.hpp"

namespace {

const std::string plugin_a_path = KEEL_TEST_PW_PLUGIN_A_PATH;
const std::string plugin_b_path = KEEL_TEST_PW_PLUGIN_B_PATH;

struct plugin {
  keel::library_lease lease;
  keel::imported<void(int)> throw_code;
  keel::imported<void()> report;
  keel::imported<const void*()> loader;
  keel::imported<const void*()> category;
  keel::imported<const void*()> device;
  keel::imported<const void*()> fence;
  keel::imported<int(const char*)> take_lease;
  keel::imported<int()> drop_lease;

  explicit plugin(const std::string& path)
      : lease(keel::library_loader::global().acquire(path)),
        throw_code(lease.import<void(int)>("keel_pw_throw")),
        report(lease.import<void()>("keel_pw_report")),
        loader(lease.import<const void*()>("keel_pw_loader")),
        category(lease.import<const void*()>("keel_pw_category")),
        device(lease.import<const void*()>("keel_pw_device")),
        fence(lease.import<const void*()>("keel_pw_fence")),
        take_lease(lease.import<int(const char*)>("keel_pw_take_lease")),
        drop_lease(lease.import<int()>("keel_pw_drop_lease")) {}
};

#if !defined(KEEL_TEST_PW_HEADER_ONLY) && !defined(KEEL_TEST_PW_MIXED_ABI)
struct report {
  std::error_code code;
  std::string api;
};
std::mutex reports_mutex;
std::vector<report> reports;

void record(std::error_code code, const char* api, const char*) noexcept {
  std::lock_guard<std::mutex> lock(reports_mutex);
  reports.push_back({code, api});
}
#endif

}  // namespace

#if defined(KEEL_TEST_PW_MIXED_ABI)

TEST_CASE("a plugin built against another keel ABI fails to load instead of sharing state it does not match") {
  try {
    plugin other(plugin_a_path);
    FAIL("the plugin of another ABI namespace loaded");
  } catch (const keel::error& e) {
    CHECK(e.code() == keel::errc::library_load_failed);
    const std::string what = e.what();
    CHECK(what.find("undefined symbol") != std::string::npos);
    CHECK(what.find("v0_other_release") != std::string::npos);
  }
  CHECK(keel::library_loader::global().use_count(plugin_a_path) == 0);
  // A plugin of this ABI still loads and shares the process's state.
  plugin same(plugin_b_path);
  CHECK(same.loader() == &keel::library_loader::global());
}

#else

TEST_CASE("a keel::errc thrown in a hidden-visibility plugin equals keel::errc in the host") {
  for (const std::string& path : {plugin_a_path, plugin_b_path}) {
    plugin p(path);
    try {
      p.throw_code(static_cast<int>(keel::errc::timeout));
      FAIL("the plugin did not throw");
    } catch (const keel::error& e) {
      CHECK(e.code() == keel::errc::timeout);
      CHECK(e.code() != keel::errc::task_failed);
      CHECK(keel::errc::timeout == e.code());
      CHECK(e.code() == std::errc::timed_out);  // the portable condition still holds
    }
  }
}

#if !defined(KEEL_TEST_PW_HEADER_ONLY)

TEST_CASE("the host and its plugins share one keel error category") {
  plugin a(plugin_a_path);
  plugin b(plugin_b_path);
  CHECK(a.category() == &keel::keel_category());
  CHECK(b.category() == &keel::keel_category());
}

TEST_CASE("the error handler the host sets receives what every plugin reports") {
  plugin a(plugin_a_path);
  plugin b(plugin_b_path);
  {
    std::lock_guard<std::mutex> lock(reports_mutex);
    reports.clear();
  }
  const keel::error_handler previous = keel::set_error_handler(&record);
  a.report();
  b.report();
  keel::set_error_handler(previous);
  std::lock_guard<std::mutex> lock(reports_mutex);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0].api == "plugin_a");
  CHECK(reports[1].api == "plugin_b");
  CHECK(reports[0].code == keel::errc::timeout);
  CHECK(reports[1].code == keel::errc::timeout);
}

TEST_CASE("a lease a plugin takes is a lease in the host's one library loader") {
  plugin a(plugin_a_path);
  plugin b(plugin_b_path);
  CHECK(a.loader() == &keel::library_loader::global());
  CHECK(b.loader() == &keel::library_loader::global());

  const std::size_t host_holders = b.lease.use_count();  // the plugin object's lease and its imports
  REQUIRE(a.take_lease(plugin_b_path.c_str()) == 0);
  CHECK(b.lease.use_count() == host_holders + 1);
  CHECK(keel::library_loader::global().use_count(plugin_b_path) == host_holders + 1);

  // The host lets go of plugin B: plugin A's lease must keep it loaded.
  { plugin gone = std::move(b); }
  CHECK(keel::library_loader::global().use_count(plugin_b_path) == 1);
  CHECK(keel::library_loader::is_mapped(plugin_b_path));
  const int dropped = a.drop_lease();
  CHECK((dropped == static_cast<int>(keel::release_result::unloaded) ||
         dropped == static_cast<int>(keel::release_result::still_mapped)));
  CHECK(keel::library_loader::global().use_count(plugin_b_path) == 0);
}

TEST_CASE("the host and its plugins share one default host device and one fence registration") {
  plugin a(plugin_a_path);
  plugin b(plugin_b_path);
  CHECK(a.device() == &keel::host::default_device());
  CHECK(b.device() == &keel::host::default_device());
  CHECK(a.fence() == &keel::detail::asymmetric_fence::registration());
  CHECK(b.fence() == &keel::detail::asymmetric_fence::registration());
}

#endif  // !KEEL_TEST_PW_HEADER_ONLY
#endif  // KEEL_TEST_PW_MIXED_ABI
