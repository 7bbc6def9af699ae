// SPDX-License-Identifier: Apache-2.0
// keel's version; CMake reads it from here, so this is the one place to bump it.
#pragma once

#define KEEL_VERSION_MAJOR 0
#define KEEL_VERSION_MINOR 1
#define KEEL_VERSION_PATCH 0
#define KEEL_VERSION (KEEL_VERSION_MAJOR * 10000 + KEEL_VERSION_MINOR * 100 + KEEL_VERSION_PATCH)
