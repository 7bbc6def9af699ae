// SPDX-License-Identifier: Apache-2.0
// Where a function's code comes from, for the separate-compilation tests
// (tests/core, tests/runtime): the file name of the shared object (or the
// executable) that defines it, through dladdr.
#pragma once

#include <dlfcn.h>

#include <string>

namespace keel_test {

// The file name of the shared object that defines the function at @p address.
inline std::string defined_in(const void* address) {
  Dl_info info{};
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "(unknown)";
  return info.dli_fname;
}

template <class F>
const void* address_of(F* f) {
  return reinterpret_cast<const void*>(f);
}

}  // namespace keel_test
