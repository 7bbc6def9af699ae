// SPDX-License-Identifier: Apache-2.0
// Events shared between processes (ipc_event.cpp): aclrtCreateEventExWithFlag
// with ACL_EVENT_IPC makes one, and the event calls hand such an event here.
#pragma once

#include "detail/state.hpp"

namespace keel::acl_emulation::detail {

// Whether `event` is a live event of aclrtCreateEventExWithFlag(ACL_EVENT_IPC)
// or aclrtIpcOpenEventHandle.
bool is_ipc_event(aclrtEvent event) noexcept;

aclError create_ipc_event(aclrtEvent* event, std::uint32_t flag, const char* api);
aclError destroy_ipc_event(aclrtEvent event);
aclError record_ipc_event(aclrtEvent event, aclrtStream stream, const char* api);
aclError wait_ipc_event(aclrtStream stream, aclrtEvent event, const char* api);
aclError synchronize_ipc_event(aclrtEvent event, const char* api);
aclError query_ipc_event(aclrtEvent event, aclrtEventRecordedStatus* status, const char* api);

}  // namespace keel::acl_emulation::detail
