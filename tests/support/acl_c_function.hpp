// SPDX-License-Identifier: Apache-2.0
// The emulation's export of a declared ACL C function, with its declared
// type, looked up by name in the test device's libascendcl.so. It uses
// Catch's INFO and REQUIRE: call it on the test's own thread only, and hand
// the pointer to any other thread.
#pragma once

#include <catch2/catch.hpp>
#include <dlfcn.h>

#include <cstring>

#include "acl_device.hpp"

namespace keel_test {

template <class F>
F* emulation_function(const char* name) {
  keel::acl::device& dev = emulation_device();
  void* symbol = ::dlsym(dev.lease(keel::acl::library::ascendcl).native().native(), name);
  INFO(name);
  REQUIRE(symbol != nullptr);
  F* f = nullptr;
  std::memcpy(&f, &symbol, sizeof f);
  return f;
}

}  // namespace keel_test

#define KEEL_C(name) ::keel_test::emulation_function<decltype(::name)>(#name)
