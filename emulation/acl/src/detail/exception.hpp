// SPDX-License-Identifier: Apache-2.0
// The exception-information callbacks (exception.cpp): each emulated device
// tells them of its failed tasks.
#pragma once

#include <cstdint>

#include "keel/host/host.hpp"

namespace keel::acl_emulation::detail {

// Makes host device `d`, emulated device `id`, report its failed tasks to
// the registered exception callbacks (one observer of its task failures among
// any others); called once, before its first stream. Throws std::bad_alloc.
void report_task_failures(keel::host::device& d, std::int32_t id);

}  // namespace keel::acl_emulation::detail
