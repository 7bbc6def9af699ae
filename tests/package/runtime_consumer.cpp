// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed keel::runtime: it must build, link the shared
// library and take keel's process-wide state from it.
#include <keel/core/error.hpp>
#include <keel/host/device.hpp>

#include <cstdio>
#include <cstring>

#if !KEEL_USE_RUNTIME_LIBRARY
#error "keel::runtime defines KEEL_USE_RUNTIME_LIBRARY=1 for its consumers"
#endif

int main() {
  const std::error_code timeout = keel::make_error_code(keel::errc::timeout);
  const bool codes = timeout == keel::errc::timeout && timeout != keel::errc::task_failed &&
                     std::strcmp(timeout.category().name(), "keel") == 0;
  const bool device = keel::host::default_device().compute_workers() >= 1;
  std::printf("keel::runtime: codes %s, default device %s\n", codes ? "ok" : "wrong", device ? "ok" : "wrong");
  return codes && device ? 0 : 1;
}
