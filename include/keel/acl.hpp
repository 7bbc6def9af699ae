// SPDX-License-Identifier: Apache-2.0
// The ACL parts, opt-in (keel::acl, not in the keel.hpp umbrella): status
// category and check(), the run-time resolved function table, and where the
// CANN libraries are.
#pragma once

#include "keel/acl/api.hpp"
#include "keel/acl/library.hpp"
#include "keel/acl/status.hpp"
#include "keel/acl/types.hpp"
