// SPDX-License-Identifier: Apache-2.0
// The plugin part: library leases over Boost.DLL and owner-aware registries.
// Link keel::plugin (Boost headers with BOOST_DLL_USE_STD_FS, and libdl).
#pragma once

#include "keel/plugin/library_lease.hpp"
#include "keel/plugin/registry.hpp"
