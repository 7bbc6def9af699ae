// SPDX-License-Identifier: Apache-2.0
// A library with no keel entry points and no host dependency, like a vendor
// runtime: benchmarks lease it, tests import from it.
extern "C" __attribute__((visibility("default"))) int keel_plain_add(int a, int b) { return a + b; }
