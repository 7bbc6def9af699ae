// SPDX-License-Identifier: Apache-2.0
// The ACL runtime's own dumps of a model, for when keel's to_dot / to_json
// (keel/runtime/model_dump.hpp) are not what a tool expects: aclmdlRIDebugPrint
// (the runtime prints the model's device, stream and task ids) and
// aclmdlRIDebugJsonPrint (the runtime writes its JSON dump to a file).
#pragma once

#include <string>

#include "keel/acl/backend.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl {

/**
 * @brief aclmdlRIDebugPrint: the runtime prints @p m's tasks (on CANN to its
 * log, on keel's emulation to stdout). @throws keel::error invalid_handle
 * (empty model), the runtime's status otherwise; not_supported without the call.
 */
inline void debug_print(model_ref m) { backend::debug_print(keel::detail::checked_handle(m, "keel::acl::debug_print")); }

/**
 * @brief aclmdlRIDebugJsonPrint: the runtime writes @p m as JSON to @p path
 * (which must be writable); @p verbose adds the kernels' arguments
 * (ACL_MDLRI_DEBUG_JSON_PRINT_VERBOSE). @throws keel::error as debug_print.
 */
inline void debug_json_print(model_ref m, const std::string& path, bool verbose = false) {
  backend::debug_json_print(keel::detail::checked_handle(m, "keel::acl::debug_json_print"), path.c_str(), verbose);
}

} KEEL_END_NAMESPACE  // namespace keel::acl
