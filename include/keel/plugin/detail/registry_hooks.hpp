// SPDX-License-Identifier: Apache-2.0
// The protocol between the library loader and the registries: which module
// owns a registration, what a load commits or rolls back, and the calls a
// registry answers while libraries load and unload.
#pragma once

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "keel/core/error.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace detail {

using owner_id = std::uint64_t;
inline constexpr owner_id host_owner = 0;

/**
 * A registration made by KEEL_REGISTER: a static object inside the module
 * that registers. Its address identifies the module (it lives in that
 * module's data), and its function can be called again to redo the
 * registration when a library stayed mapped and its constructors will not
 * run on the next load.
 */
class registrar_base {
 public:
  using function_type = void (*)(registrar_base&);
  explicit registrar_base(function_type fn) noexcept : fn_(fn) { invoke(); }
  registrar_base(const registrar_base&) = delete;
  registrar_base& operator=(const registrar_base&) = delete;

  // Runs inside dlopen (from a static constructor) or after it (replay):
  // nothing may escape, a throw here would terminate the process.
  void invoke() noexcept {
    try {
      fn_(*this);
    } catch (...) {
      report_current_exception("KEEL_REGISTER");
    }
  }

 private:
  function_type fn_;
};

/** What a load tells the registries it is committing or rolling back. */
struct load_context {
  owner_id owner = host_owner;
  const void* link_map = nullptr;  // the loaded library's, known once dlopen returned
  std::string path;                // canonical
  std::thread::id thread;          // the loading thread
};

/** Where a registration made from a given address belongs. */
struct resolution {
  enum kind_type { host, library, other_load } kind = host;
  owner_id owner = host_owner;
  std::string path;
};

/**
 * A registry as the loader sees it. The loader calls these without holding
 * any of its own locks, and never while a dlopen is in progress on the
 * calling thread.
 */
class registry_hooks {
 public:
  virtual void begin_load(std::thread::id loading_thread) noexcept = 0;
  /// Commits the staged registrations of ctx's library (and any host ones);
  /// throws, leaving the registry unchanged, if one of the library's names is taken.
  virtual void commit_load(const load_context& ctx) = 0;
  /// Destroys whatever ctx's library staged or committed in this load.
  virtual void abort_load(const load_context& ctx) noexcept = 0;
  virtual void end_load(std::thread::id loading_thread) noexcept = 0;
  /// Whether remove_owner() can take its lock on the calling thread: false
  /// when this thread already holds it (a lease released inside a callback
  /// the registry runs) and the mutex policy can tell (checked_mutex_policy).
  virtual bool can_remove_owner() const noexcept = 0;
  /// Removes (destroys) every entry @p owner made; adds their registrars to
  /// @p replay. False (reported, nothing removed) when its lock refused.
  virtual bool remove_owner(owner_id owner, std::vector<registrar_base*>& replay) noexcept = 0;

 protected:
  ~registry_hooks() = default;
};

} KEEL_END_NAMESPACE  // namespace keel::detail
