// SPDX-License-Identifier: Apache-2.0
// keel_runtime: the one instance per process of keel's process-wide state
// (the out-of-line functions of KEEL_SEPARATE_COMPILATION are in
// keel_separate.cpp).
// Every shared object that links keel::runtime (KEEL_USE_RUNTIME_LIBRARY)
// calls these functions instead of keeping a function-local static of its
// own, and the dynamic loader maps this library once per process (one
// soname), however the objects that need it were loaded. The objects live
// here, in code that is never unloaded before the process ends: no plugin
// owns one, so unloading a plugin never takes a vtable, a default handler
// or a device's worker code with it.
#include "keel/core/error.hpp"
#include "keel/core/asymmetric_fence.hpp"
#include "keel/host/device.hpp"
#if defined(KEEL_RUNTIME_WITH_PLUGIN)
#include "keel/plugin/library_lease.hpp"
#endif

#if !KEEL_USE_RUNTIME_LIBRARY
#error "keel_runtime is built with KEEL_USE_RUNTIME_LIBRARY=1 (its CMake target defines it)"
#endif

// Defined by qualified name, so each definition matches its header's
// declaration wherever the ABI namespace puts it.

const std::error_category& keel::detail::process_keel_category() noexcept {
  static const keel_category_impl category;
  return category;
}

std::atomic<keel::error_handler>& keel::detail::process_error_handler_slot() noexcept {
  static std::atomic<error_handler> slot{nullptr};
  return slot;
}

#if defined(KEEL_RUNTIME_WITH_PLUGIN)
keel::library_loader& keel::detail::process_library_loader() {
  // Never destroyed: leases in static objects of any shared object stay valid.
  static library_loader* const instance = new library_loader;
  return *instance;
}
#endif

keel::host::device& keel::host::detail::process_default_device() {
  static device instance;
  return instance;
}

const bool& keel::detail::process_fence_registration() noexcept {
  static const bool registered = asymmetric_fence::register_process();
  return registered;
}
