// SPDX-License-Identifier: Apache-2.0
// A tiny program that uses keel as a consumer would: it must build with the
// exported targets alone and exit 0.
#include <keel/keel.hpp>

#include <cstdio>

int main() {
  int cleaned = 0;
  {
    keel::scope_exit guard{[&] { ++cleaned; }};
  }
  keel::guarded<int> counter{41};
  counter.write([](int& v) { ++v; });
  const int value = counter.read([](int v) { return v; });
  std::printf("keel %d.%d.%d: cleaned=%d value=%d\n", KEEL_VERSION_MAJOR, KEEL_VERSION_MINOR, KEEL_VERSION_PATCH,
              cleaned, value);
  return cleaned == 1 && value == 42 ? 0 : 1;
}
