// SPDX-License-Identifier: Apache-2.0
// Umbrella header: everything that needs only the standard library.
// Optional parts (Boost policies, plugins, SIMD ops) are included on their own.
#pragma once

#include "keel/core.hpp"
#include "keel/runtime.hpp"
