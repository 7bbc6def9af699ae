// SPDX-License-Identifier: Apache-2.0
// Umbrella header: the core (handles, guards, errors, policies) and the
// runtime templates over a backend. A backend is included on its own (the
// host backend: keel/host/host.hpp, or keel/runtime.hpp for the templates
// and the host backend together), as are the optional parts (Boost policies,
// plugins, SIMD ops).
#pragma once

#include "keel/core.hpp"
#include "keel/runtime/runtime.hpp"
