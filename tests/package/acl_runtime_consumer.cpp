// SPDX-License-Identifier: Apache-2.0
// A consumer of the installed keel::acl_runtime: built with
// KEEL_SEPARATE_COMPILATION, so the ACL backend's checked layer, native calls
// and status category come from the installed shared library (this TU only
// declares them); it must link and run over keel's ACL emulation.
#include <keel/acl/backend.hpp>

#include <cstdio>

#if !defined(KEEL_SEPARATE_COMPILATION) || !KEEL_USE_RUNTIME_LIBRARY
#error "the acl_runtime consumer is built with KEEL_SEPARATE_COMPILATION and keel::runtime"
#endif
#ifndef KEEL_ACL_EMULATION_DIR
#error "KEEL_ACL_EMULATION_DIR: the directory of the emulation's libascendcl.so"
#endif

int main() {
  keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR}};
  keel::acl::stream s{dev};
  int runs = 0;
  keel::acl::model m;
  {
    keel::acl::capture_scope capture{s};
    s.launch_host([&runs] { ++runs; });
    m = capture.end();
  }
  m.execute(s);
  m.execute(s);
  s.synchronize();
  bool status = false;
  try {
    keel::acl::check(100000, "aclrtTest");  // ACL_ERROR_INVALID_PARAM
  } catch (const keel::error& e) {
    status = e.code() == keel::errc::invalid_parameter;
  }
  std::printf("keel::acl_runtime: replays %s, statuses %s\n", runs == 2 ? "ok" : "wrong", status ? "ok" : "wrong");
  return runs == 2 && status ? 0 : 1;
}
