// SPDX-License-Identifier: Apache-2.0
// Runtime umbrella: the handle templates and the host backend (standard library only).
#pragma once

#include "keel/host/host.hpp"
#include "keel/runtime/runtime.hpp"
