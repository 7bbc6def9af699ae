// SPDX-License-Identifier: Apache-2.0
// The member of library_lease (keel/plugin/library_lease.hpp) that calls its
// loader: included by keel/plugin/library_loader.hpp once the loader is
// complete (library_lease.hpp includes the loader at its end).
#pragma once

#include "keel/plugin/library_lease.hpp"
#include "keel/plugin/library_loader.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

inline release_result library_lease::release() noexcept {
  detail::library_record* rec = std::exchange(record_, nullptr);
  if (rec == nullptr) return release_result::empty;
  return rec->loader->release(*rec);
}

KEEL_END_NAMESPACE  // namespace keel
