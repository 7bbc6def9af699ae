// SPDX-License-Identifier: Apache-2.0
// The ACL device of a test executable of its own over keel's emulation
// (libascendcl.so from KEEL_ACL_EMULATION_DIR, loaded at run time), made on
// first use and kept for the process.
#pragma once

#include "keel/acl/device.hpp"

#ifndef KEEL_ACL_EMULATION_DIR
#error "KEEL_ACL_EMULATION_DIR: the directory of the emulation's libascendcl.so"
#endif

namespace keel_test {

inline keel::acl::device& emulation_device() {
  static keel::acl::device dev{keel::acl::device_options{0, KEEL_ACL_EMULATION_DIR}};
  return dev;
}

}  // namespace keel_test
