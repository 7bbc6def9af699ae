// SPDX-License-Identifier: Apache-2.0
// The ACL backend's native layer is not public: committing a staged update
// without the checked layer's claim and count checks cannot be named through
// keel::acl::backend. The checked update_end, which makes them, can.
#include "keel/acl/backend.hpp"

int main() {
  void (*checked)(keel::acl::backend::stream_handle) = &keel::acl::backend::update_end;
  (void)checked;
#ifndef KEEL_COMPILE_FAIL_CONTROL
  auto unchecked = &keel::acl::backend::update_commit;
  (void)unchecked;
#endif
}
