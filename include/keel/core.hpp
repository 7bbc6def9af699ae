// SPDX-License-Identifier: Apache-2.0
// The core headers, standard library only: handles, guards, errors, policies.
#pragma once

#include "keel/core/checked_mutex.hpp"
#include "keel/core/config.hpp"
#include "keel/core/error.hpp"
#include "keel/core/guarded.hpp"
#include "keel/core/mutex_policy.hpp"
#include "keel/core/scope_guard.hpp"
#include "keel/core/unique_handle.hpp"
#include "keel/version.hpp"
