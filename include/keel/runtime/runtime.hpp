// SPDX-License-Identifier: Apache-2.0
// The runtime templates, without a backend.
#pragma once

#include "keel/runtime/backend.hpp"
#include "keel/runtime/buffer.hpp"
#include "keel/runtime/event.hpp"
#include "keel/runtime/model.hpp"
#include "keel/runtime/stream.hpp"
#include "keel/runtime/task_group.hpp"
#include "keel/runtime/types.hpp"
