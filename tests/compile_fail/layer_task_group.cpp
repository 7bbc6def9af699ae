// SPDX-License-Identifier: Apache-2.0
// An update scope over a backend without update_abort: the task-group layer names the call.
#include "partial_backends.hpp"

#ifdef KEEL_COMPILE_FAIL_CONTROL
using backend = keel::host::backend;
#else
using backend = compile_fail::lacks_update_abort;
#endif

int main() {
  keel::basic_stream<backend> s{keel::host::default_device()};
  keel::basic_task_group<backend> group;
  keel::basic_update_scope<backend> update{s, group};
  update.cancel();
}
