// SPDX-License-Identifier: Apache-2.0
// library_lease: process-wide, reference-counted leases on shared libraries;
// the first lease loads and initialises, the last finalises, removes the
// library's registry entries and unloads (the loader that does it:
// keel/plugin/library_loader.hpp, included at the end).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// Boost.DLL on std::filesystem: keel::plugin's CMake target and keel.pc
// define BOOST_DLL_USE_STD_FS for every translation unit (a header that
// defined it would change Boost.DLL's types under an earlier include of it).
#if !defined(BOOST_DLL_USE_STD_FS)
#error "keel/plugin needs BOOST_DLL_USE_STD_FS for the whole program: link keel::plugin, use keel.pc's flags, or define it"
#endif
#include <boost/dll/shared_library.hpp>

#include "keel/core/error.hpp"
#include "keel/plugin/detail/registry_hooks.hpp"

#include "keel/core/config.hpp"

/**
 * @brief Marks a plugin's entry point: C linkage, exported even when the
 * plugin is built with hidden visibility (which keel recommends: see
 * library_loader).
 *
 * @code
 * KEEL_PLUGIN_EXPORT int keel_plugin_init() { return open_device() ? 0 : 1; }
 * KEEL_PLUGIN_EXPORT int keel_plugin_fini() { close_device(); return 0; }
 * KEEL_PLUGIN_EXPORT void keel_plugin_register() { passes().add("fold", &fold); }
 * @endcode
 */
#define KEEL_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

KEEL_BEGIN_NAMESPACE

class library_loader;
class library_lease;

/** @brief The entry points a plugin may export (all optional unless load_options say otherwise). */
namespace entry_point {
/// `int keel_plugin_init()`: after every real or logical first load; non-zero or a throw fails the acquisition.
inline constexpr const char* init = "keel_plugin_init";
/// `int keel_plugin_fini()`: before the last lease unloads; failure goes to keel's error handler.
inline constexpr const char* fini = "keel_plugin_fini";
/// `void keel_plugin_register()`: called on every first lease, after dlopen returns and before init.
inline constexpr const char* register_entries = "keel_plugin_register";
}  // namespace entry_point

/**
 * @brief How a library is loaded the first time; later leases share that load.
 * A plain value: copyable, no thread safety of its own, nothing throws.
 */
struct load_options {
  /// Fail with errc::symbol_not_found unless the library exports keel_plugin_init.
  bool require_init = false;
  /// dlopen mode. RTLD_NOW by default, so a missing symbol fails the acquisition
  /// instead of a later call.
  boost::dll::load_mode::type mode = boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local;
};

/** @brief What releasing a lease did. */
enum class release_result {
  empty,         ///< the lease held nothing
  shared,        ///< other leases remain; nothing was unloaded
  unloaded,      ///< last lease: finalised, entries removed, and the library is gone from the process
  still_mapped,  ///< last lease: finalised, entries removed, dlclose done, but the OS kept it mapped
};

namespace detail {

enum class library_state { unloaded, loading, loaded, unloading };

/** One library the loader knows, identified by device and inode. */
struct library_record {
  library_loader* loader = nullptr;
  owner_id id = host_owner;
  std::string path;  // canonical, for messages and identity with dladdr
  // Hot: touched by every share and drop. The rest is guarded by the loader's mutex.
  alignas(64) std::atomic<std::size_t> count{0};
  alignas(64) library_state state = library_state::unloaded;
  std::thread::id loading_thread;
  boost::dll::shared_library library;
  const void* link_map = nullptr;
  std::uintptr_t base = 0;  // load address at the last unload, to validate a replay
  int (*fini)() = nullptr;
  std::vector<registrar_base*> replay;
  std::vector<std::string> spellings;
};

}  // namespace detail

/**
 * @brief A symbol imported through a lease: a function (call it) or an
 * object (dereference it). Holding it holds the lease, so the library cannot
 * be finalised or unloaded under it.
 *
 * Ownership: shares the lease (copying shares it again). Thread safety: as
 * library_lease. Exceptions: copy and move are noexcept; calling a function
 * symbol throws what the function throws.
 */
template <class T>
class imported;

/**
 * @brief One holder's claim on a loaded library: the library stays loaded and
 * initialised, and its registry entries stay registered, while any lease (or
 * imported symbol) on it exists.
 *
 * Ownership: copying shares (one more holder, an atomic increment); moving
 * transfers; the last holder to go finalises and unloads. Thread safety:
 * distinct lease objects may be used, copied and destroyed concurrently, like
 * shared_ptr. Exceptions: copy, move and destruction are noexcept; finalisation
 * failures in the destructor go to keel's error handler (keel::set_error_handler).
 *
 * @code
 * keel::library_lease lease = keel::library_loader::global().acquire("libpasses.so");
 * auto answer = lease.import<int()>("answer");   // keeps the library loaded
 * int v = answer();
 * keel::release_result r = lease.release();       // unloaded, still_mapped or shared
 * @endcode
 *
 * Do not drop the last lease from inside a registry callback (the unload
 * needs the registry's exclusive lock) or from the plugin's own code. With
 * checked_mutex_policy the first is detected: the would_deadlock goes to the
 * error handler, and the library stays loaded (the loader keeps the lease).
 */
class library_lease {
 public:
  library_lease() noexcept = default;
  /// Another lease on the same library: it stays loaded while any lease lives.
  library_lease(const library_lease& other) noexcept : record_(other.record_) {
    // A holder already exists, so the count cannot reach zero under us.
    if (record_ != nullptr) record_->count.fetch_add(1, std::memory_order_relaxed);
  }
  /// Takes the other object's handle; the other is left empty.
  library_lease(library_lease&& other) noexcept : record_(std::exchange(other.record_, nullptr)) {}
  /// Releases this lease, then shares the other's library.
  library_lease& operator=(const library_lease& other) noexcept {
    library_lease(other).swap(*this);
    return *this;
  }
  /// Releases what this holds, then takes the other object's handle; the other is left empty.
  library_lease& operator=(library_lease&& other) noexcept {
    library_lease(std::move(other)).swap(*this);
    return *this;
  }
  ~library_lease() { release(); }

  /**
   * @brief Gives up this claim now and says what that did. The last release
   * removes the library's registry entries (waiting for callbacks running
   * them), runs keel_plugin_fini (failures go to the error handler), unloads
   * the library and probes whether the OS really unmapped it. Throws: nothing.
   */
  release_result release() noexcept;

  /** @brief Whether this lease holds a library. */
  explicit operator bool() const noexcept { return record_ != nullptr; }
  /** @brief The canonical path of the leased library. @pre *this holds a library. */
  const std::string& path() const noexcept { return record_->path; }
  /** @brief How many leases (and imported symbols) currently hold the library; 0 when empty. */
  std::size_t use_count() const noexcept {
    return record_ != nullptr ? record_->count.load(std::memory_order_relaxed) : 0;
  }
  /**
   * @brief The Boost.DLL library. Objects obtained from it directly (for
   * example with boost::dll::import<T>) keep the OS handle but not the lease:
   * prefer import().
   */
  const boost::dll::shared_library& native() const noexcept { return record_->library; }

  /** @brief Whether the library exports @p symbol. @pre *this holds a library. */
  bool has(const char* symbol) const noexcept { return record_->library.has(symbol); }

  /**
   * @brief Imports a function (T = R(Args...)) or an object (any other T)
   * that keeps this lease alive while it is held.
   * @throws keel::error (errc::symbol_not_found) naming the library and the symbol;
   *         errc::invalid_handle on an empty lease.
   */
  template <class T>
  imported<T> import(const std::string& symbol) const;

  /// Exchanges what this and the other object hold.
  void swap(library_lease& other) noexcept { std::swap(record_, other.record_); }
  friend void swap(library_lease& a, library_lease& b) noexcept { a.swap(b); }
  friend bool operator==(const library_lease& a, const library_lease& b) noexcept {
    return a.record_ == b.record_;
  }
  friend bool operator!=(const library_lease& a, const library_lease& b) noexcept { return !(a == b); }

 private:
  friend class library_loader;
  // Adopts one count already taken on @p record.
  explicit library_lease(detail::library_record* record) noexcept : record_(record) {}

  detail::library_record* record_ = nullptr;
};

/** @brief An imported function: callable, holds the lease. See imported. */
template <class R, class... Args>
class imported<R(Args...)> {
 public:
  imported() noexcept = default;
  /// Calls the imported function with @p args.
  R operator()(Args... args) const { return function_(std::forward<Args>(args)...); }
  /// Whether this holds a symbol.
  explicit operator bool() const noexcept { return function_ != nullptr; }
  /// The function's address, null when empty.
  R (*get() const noexcept)(Args...) { return function_; }
  /// The lease that keeps the symbol's library loaded.
  const library_lease& lease() const noexcept { return lease_; }

 private:
  friend class library_lease;
  imported(library_lease lease, R (*function)(Args...)) noexcept : lease_(std::move(lease)), function_(function) {}
  library_lease lease_;
  R (*function_)(Args...) = nullptr;
};

/** @brief An imported object: dereference it; holds the lease. See imported. */
template <class T>
class imported {
  static_assert(!std::is_reference_v<T>, "keel::imported<T>: T must be an object or a function type");

 public:
  imported() noexcept = default;
  /// The imported object.
  T& operator*() const noexcept { return *object_; }
  /// Member access to the imported object.
  T* operator->() const noexcept { return object_; }
  /// The symbol's address, null when empty.
  T* get() const noexcept { return object_; }
  /// Whether this holds a symbol.
  explicit operator bool() const noexcept { return object_ != nullptr; }
  /// The lease that keeps the symbol's library loaded.
  const library_lease& lease() const noexcept { return lease_; }

 private:
  friend class library_lease;
  imported(library_lease lease, T* object) noexcept : lease_(std::move(lease)), object_(object) {}
  library_lease lease_;
  T* object_ = nullptr;
};

template <class T>
imported<T> library_lease::import(const std::string& symbol) const {
  if (record_ == nullptr) throw_error(errc::invalid_handle, "library_lease::import", "the lease is empty");
  if (!record_->library.has(symbol)) {
    ::keel::detail::throw_composed(errc::symbol_not_found, "library_lease::import",
                                   {record_->path, ": no symbol ", symbol});
  }
  // get<T> returns T& for objects and functions alike: its address is what we keep.
  return imported<T>(*this, &record_->library.get<T>(symbol));
}

KEEL_END_NAMESPACE  // namespace keel

// The loader, and library_lease::release(), which needs it.
#include "keel/plugin/library_loader.hpp"
