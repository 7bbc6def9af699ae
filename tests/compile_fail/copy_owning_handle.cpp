// SPDX-License-Identifier: Apache-2.0
// An owning handle is move-only: copying a stream does not compile.
#include <utility>

#include "keel/host/host.hpp"

int main() {
  keel::host::stream a{keel::host::default_device()};
#ifdef KEEL_COMPILE_FAIL_CONTROL
  keel::host::stream b = std::move(a);
#else
  keel::host::stream b = a;
#endif
  b.synchronize();
}
