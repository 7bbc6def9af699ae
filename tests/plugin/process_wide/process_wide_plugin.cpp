// SPDX-License-Identifier: Apache-2.0
// A plugin built as keel tells plugin authors to build them (hidden
// visibility, inlines hidden, only the entry points exported), loaded with
// RTLD_LOCAL by a host built the same way. Built twice (A and B): each
// throws, reports, takes leases and answers where it sees keel's
// process-wide state, so the host can check that there is one of each.
#include <string>

#include "keel/core/error.hpp"
#include "keel/host/device.hpp"
#include "keel/core/asymmetric_fence.hpp"
#include "keel/plugin/library_lease.hpp"

#ifndef KEEL_PW_PLUGIN_NAME
#error "KEEL_PW_PLUGIN_NAME names the plugin in what it throws and reports"
#endif

namespace {
keel::library_lease& held_lease() {
  static keel::library_lease lease;
  return lease;
}
}  // namespace

// Throws keel::errc @p code as keel::error, through this plugin's copy of the headers.
KEEL_PLUGIN_EXPORT void keel_pw_throw(int code) {
  keel::throw_error(static_cast<keel::errc>(code), KEEL_PW_PLUGIN_NAME, "thrown in the plugin");
}

// Reports errc::timeout to the error handler in force, as a destructor would.
KEEL_PLUGIN_EXPORT void keel_pw_report() {
  keel::report_error(keel::make_error_code(keel::errc::timeout), KEEL_PW_PLUGIN_NAME, "reported by the plugin");
}

// Where this plugin sees each piece of process-wide state.
KEEL_PLUGIN_EXPORT const void* keel_pw_loader() { return &keel::library_loader::global(); }
KEEL_PLUGIN_EXPORT const void* keel_pw_category() { return &keel::keel_category(); }
KEEL_PLUGIN_EXPORT const void* keel_pw_device() { return &keel::host::default_device(); }
KEEL_PLUGIN_EXPORT const void* keel_pw_fence() { return &keel::detail::asymmetric_fence::registration(); }

// Takes (and keeps) a lease on @p path through library_loader::global(); 0 on success.
KEEL_PLUGIN_EXPORT int keel_pw_take_lease(const char* path) {
  try {
    held_lease() = keel::library_loader::global().acquire(path);
    return 0;
  } catch (const keel::error&) {
    return 1;
  }
}

// Drops the lease keel_pw_take_lease took; returns the keel::release_result.
KEEL_PLUGIN_EXPORT int keel_pw_drop_lease() { return static_cast<int>(held_lease().release()); }
