// SPDX-License-Identifier: Apache-2.0
// The plugin part: library leases, their loader over Boost.DLL, and
// owner-aware registries. Link keel::plugin (Boost headers, libdl, and the
// definition BOOST_DLL_USE_STD_FS).
#pragma once

#include "keel/plugin/library_lease.hpp"
#include "keel/plugin/library_loader.hpp"
#include "keel/plugin/registry.hpp"
