// SPDX-License-Identifier: Apache-2.0
// library_lease: process-wide, reference-counted leases on shared libraries
// over Boost.DLL; the first lease loads and initialises, the last finalises,
// removes the library's registry entries and unloads.
#pragma once

#ifndef BOOST_DLL_USE_STD_FS
#define BOOST_DLL_USE_STD_FS
#endif

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include "keel/core/config.hpp"
#include "keel/core/error.hpp"
#include "keel/core/scope_guard.hpp"

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

// dlopen trusts an ELF file's program headers: a file cut inside one of its
// loadable segments is mapped past its end, and the first relocation that
// touches the missing pages kills the process with SIGBUS. Checking that
// every PT_LOAD segment lies inside the file turns that into an error.
// Returns the reason the file cannot be loaded, or an empty string when the
// segments fit (or the file is not a native ELF object: dlopen explains those).
inline std::string truncated_segments(const std::string& path, std::uint64_t file_size) {
  std::ifstream file(path, std::ios::binary);
  ElfW(Ehdr) header{};
  if (!file.read(reinterpret_cast<char*>(&header), sizeof header)) return {};
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) return {};
#if defined(__LP64__)
  if (header.e_ident[EI_CLASS] != ELFCLASS64) return {};
#else
  if (header.e_ident[EI_CLASS] != ELFCLASS32) return {};
#endif
  if (header.e_phentsize != sizeof(ElfW(Phdr))) return {};
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    ElfW(Phdr) segment{};
    file.seekg(static_cast<std::streamoff>(header.e_phoff + i * sizeof segment));
    if (!file.read(reinterpret_cast<char*>(&segment), sizeof segment)) {
      return "the file is truncated: its program headers end past the end of the file";
    }
    // Written so that hostile offsets near 2^64 cannot wrap the comparison.
    if (segment.p_type == PT_LOAD && (segment.p_filesz > file_size || segment.p_offset > file_size - segment.p_filesz)) {
      return "the file is truncated: loadable segment " + std::to_string(i) + " ends at byte " +
             std::to_string(segment.p_offset + segment.p_filesz) + " of a " + std::to_string(file_size) +
             "-byte file";
    }
  }
  return {};
}

// What a stat's file type is, for the error that refuses anything but a regular file.
inline const char* file_type_name(mode_t mode) noexcept {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "an unknown file type";
}

// dlopen(RTLD_NOLOAD) never loads: it only answers whether the object is
// mapped (and if so takes a reference we must give back).
inline void* probe_mapped(const std::string& path) noexcept {
  return ::dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
}

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

/**
 * @brief The process-wide table of leased libraries (use global(); separate
 * loaders exist for tests). A library is identified by its file (device and
 * inode), so two spellings of one path, symlinks and `..` included, are one
 * library; a spelling seen before is looked up without a file-system call.
 *
 * Ownership: owns every library record; it must outlive its leases and
 * registries (global() is never destroyed). Thread safety: every member is
 * thread-safe; no lock of the loader or of a registry is held while dlopen or
 * dlclose runs. Exceptions: acquire() gives the strong guarantee: on failure the
 * use count, the registries and the set of loaded libraries are as before.
 *
 * Build plugins with hidden visibility (CMake CXX_VISIBILITY_PRESET hidden,
 * VISIBILITY_INLINES_HIDDEN ON) and export only their entry points with
 * KEEL_PLUGIN_EXPORT: with GCC, exported statics of inline functions become
 * STB_GNU_UNIQUE symbols, which can keep dlclose from unmapping the library.
 * Either way keel stays correct: release() reports release_result::still_mapped
 * and the next lease replays the library's KEEL_REGISTER registrations.
 * With hidden visibility, a plugin shares the host's global() loader (and
 * error handler) only when the host and the plugin both link keel::runtime
 * (KEEL_USE_RUNTIME_LIBRARY); otherwise its leases live in a loader of its own.
 * POSIX (glibc) only: it relies on dlinfo, dladdr1 and RTLD_NOLOAD.
 */
class library_loader {
 public:
  library_loader() = default;
  library_loader(const library_loader&) = delete;
  library_loader& operator=(const library_loader&) = delete;
  ~library_loader() {
    for (auto& [key, record] : records_) {
      if (record->count.load() != 0) {
        report_error(make_error_code(errc::invalid_state), "library_loader::~library_loader",
                     ("destroyed while leases on " + record->path + " exist; they now dangle").c_str());
      }
    }
  }

  /**
   * @brief The process-wide loader; never destroyed, so leases in static
   * objects stay valid. One per process when every shared object links
   * keel::runtime (KEEL_USE_RUNTIME_LIBRARY); without it, one per shared
   * object that hides its symbols, so a plugin's leases are not the host's.
   */
  static library_loader& global();

  /**
   * @brief Leases the library at @p path, loading and initialising it if no
   * lease on it exists. Options apply to the load only.
   * @throws keel::error naming the path and the reason: errc::library_load_failed
   *   (no such file, not a regular file: a directory, FIFO, socket or device
   *   is refused before anything opens it, not a library, unresolved symbols, keel_plugin_init or
   *   keel_plugin_register failed or threw), errc::symbol_not_found (a required
   *   entry point is missing), errc::invalid_parameter (a name the plugin
   *   registers is already taken), errc::would_deadlock (the library's own
   *   initialisation asked for a lease on it).
   */
  library_lease acquire(std::string_view path, const load_options& options = {});
  /// A lease on the library at @p path, loaded with @p options by the first lease.
  library_lease acquire(const char* path, const load_options& options = {}) {
    return acquire(std::string_view(path), options);
  }
  /// A lease on the library at @p path, loaded with @p options by the first lease.
  library_lease acquire(const std::string& path, const load_options& options = {}) {
    return acquire(std::string_view(path), options);
  }
  /// A lease on the library at @p path, loaded with @p options by the first lease.
  library_lease acquire(const std::filesystem::path& path, const load_options& options = {}) {
    return acquire(std::string_view(path.native()), options);
  }

  /** @brief Canonical paths of the libraries that currently have leases. */
  std::vector<std::string> loaded() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> result;
    for (const auto& [key, record] : records_) {
      if (record->state != detail::library_state::unloaded) result.push_back(record->path);
    }
    return result;
  }

  /** @brief The number of holders of the library @p path (0 if not leased); no load happens. */
  std::size_t use_count(std::string_view path) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = spellings_.find(path);
    return it == spellings_.end() ? 0 : it->second->count.load(std::memory_order_relaxed);
  }

  /** @brief Whether the OS has @p path mapped right now (dlopen with RTLD_NOLOAD). Throws: nothing. */
  static bool is_mapped(const std::filesystem::path& path) noexcept {
    void* handle = detail::probe_mapped(path.native());
    if (handle == nullptr) return false;
    ::dlclose(handle);
    return true;
  }

  /** @cond detail */
  // Registries attach themselves; see registry<Entry, Policy>.
  void attach(detail::registry_hooks* hooks) {
    std::lock_guard<std::mutex> lock(mutex_);
    hooks_.push_back(hooks);
    // Created while loads run (typically by a plugin's first registration):
    // stage like the registries that were there when they began.
    for (const auto& [key, record] : records_) {
      if (record->state == detail::library_state::loading) hooks->begin_load(record->loading_thread);
    }
  }
  void detach(detail::registry_hooks* hooks) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    hooks_.erase(std::remove(hooks_.begin(), hooks_.end(), hooks), hooks_.end());
  }

  /**
   * Which library the code or data at @p address belongs to. Calls dladdr,
   * which takes the C library's loader lock: the caller must hold no lock
   * that a static constructor could ask for.
   */
  detail::resolution resolve(const void* address) const {
    Dl_info info{};
    void* map = nullptr;
    detail::resolution result;
    if (::dladdr1(address, &info, &map, RTLD_DL_LINKMAP) == 0 || map == nullptr) return result;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [key, record] : records_) {
      const bool same_map = record->link_map == map;
      if (record->state == detail::library_state::loaded && same_map) {
        result.kind = detail::resolution::library;
      } else if (record->state == detail::library_state::loading &&
                 (same_map || (info.dli_fname != nullptr && record->path == info.dli_fname))) {
        result.kind = detail::resolution::other_load;
      } else {
        continue;
      }
      result.owner = record->id;
      result.path = record->path;
      return result;
    }
    return result;
  }
  /** @endcond */

 private:
  friend class library_lease;
  using record = detail::library_record;
  struct file_key {
    std::uint64_t device;
    std::uint64_t inode;
    bool operator<(const file_key& o) const noexcept {
      return device != o.device ? device < o.device : inode < o.inode;
    }
  };

  // Another count, unless the count already reached zero (a release is
  // tearing the library down, and nobody may revive it).
  static bool try_share(record& rec) noexcept {
    std::size_t count = rec.count.load(std::memory_order_relaxed);
    while (count != 0) {
      if (rec.count.compare_exchange_weak(count, count + 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  }

  [[noreturn]] static void fail(errc code, const std::string& path, const std::string& reason) {
    ::keel::detail::throw_composed(code, "library_loader::acquire", {path, ": ", reason});
  }

  void load(record& rec, const load_options& options);
  std::vector<detail::registry_hooks*> current_hooks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return hooks_;
  }
  release_result release(record& rec) noexcept;
  void finalize(record& rec) noexcept;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  // Spelling as given -> record: a known spelling needs no canonicalisation.
  // Ordered with a transparent comparator: found by string_view, no allocation.
  std::map<std::string, record*, std::less<>> spellings_;
  std::map<file_key, std::unique_ptr<record>> records_;
  std::vector<detail::registry_hooks*> hooks_;
  detail::owner_id next_id_ = 1;
};

#if KEEL_USE_RUNTIME_LIBRARY
namespace detail {
// Defined in keel_runtime: the one loader of the process.
KEEL_RUNTIME_API library_loader& process_library_loader();
}  // namespace detail
#endif

inline library_loader& library_loader::global() {
#if KEEL_USE_RUNTIME_LIBRARY
  return detail::process_library_loader();
#else
  static library_loader* const instance = new library_loader;
  return *instance;
#endif
}

inline library_lease library_loader::acquire(std::string_view spelling, const load_options& options) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = spellings_.find(spelling);
    if (it != spellings_.end() && try_share(*it->second)) return library_lease(it->second);
  }

  // First sight of this spelling, or the library is not loaded: find the file.
  const std::filesystem::path path(spelling);
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec) fail(errc::library_load_failed, path.string(), "cannot resolve the path: " + ec.message());
  struct stat st {};
  if (::stat(canonical.c_str(), &st) != 0) {
    fail(errc::library_load_failed, canonical.string(), std::error_code(errno, std::generic_category()).message());
  }
  // Decided on the stat alone: opening a FIFO blocks until a writer comes
  // (dlopen, even its RTLD_NOLOAD probe, and the truncation check open the
  // file), and no library is anything but a regular file.
  if (!S_ISREG(st.st_mode)) {
    fail(errc::library_load_failed, canonical.string(),
         std::string("not a regular file (") + detail::file_type_name(st.st_mode) + "), so not a loadable library");
  }
  const file_key key{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};

  std::unique_lock<std::mutex> lock(mutex_);
  // The record is looked up again after every wait: a load that failed
  // elsewhere erases the record it created, and a waiter must never touch it.
  record* found_record = nullptr;
  bool fresh = false;
  // Remember a spelling only once it leads to a loaded library, so a failed
  // acquisition leaves nothing behind.
  auto remember = [this](record& r, std::string_view known) {
    if (spellings_.emplace(std::string(known), &r).second) r.spellings.emplace_back(known);
  };
  for (;;) {
    auto found = records_.find(key);
    fresh = found == records_.end();
    if (fresh) {
      auto created = std::make_unique<record>();
      created->loader = this;
      created->id = next_id_++;
      created->path = canonical.string();
      found = records_.emplace(key, std::move(created)).first;
    }
    record& candidate = *found->second;
    if (try_share(candidate)) {
      remember(candidate, spelling);
      return library_lease(&candidate);
    }
    if (candidate.state == detail::library_state::unloaded) {
      found_record = &candidate;
      break;
    }
    if (candidate.state == detail::library_state::loading && candidate.loading_thread == std::this_thread::get_id()) {
      fail(errc::would_deadlock, candidate.path, "the library's own initialisation asked for a lease on it");
    }
    // Loading elsewhere, or the last lease is being released: wait for the outcome.
    changed_.wait(lock);
  }
  record& rec = *found_record;
  rec.state = detail::library_state::loading;
  rec.loading_thread = std::this_thread::get_id();
  // Registries stage every registration from here until end_load, so nothing
  // that runs inside dlopen ever waits for a registry lock. The registries
  // attached now begin here; one created during the load (a function-local
  // static first used by a plugin's constructor) begins in attach(). Both
  // sets end in the same critical section that publishes the outcome.
  const std::thread::id self = std::this_thread::get_id();
  for (auto* h : hooks_) h->begin_load(self);
  lock.unlock();

  // noexcept: a registry left staging forever would be worse than stopping
  // here when copying a few pointers fails. end_load may commit, which needs
  // our mutex: call it without.
  auto end_loads = [&](std::unique_lock<std::mutex>& held) noexcept {
    const std::vector<detail::registry_hooks*> hooks = hooks_;
    held.unlock();
    for (auto* h : hooks) h->end_load(self);
  };
  try {
    load(rec, options);
  } catch (...) {
    lock.lock();
    rec.state = detail::library_state::unloaded;
    rec.loading_thread = {};
    rec.link_map = nullptr;
    rec.fini = nullptr;
    if (fresh) records_.erase(key);
    changed_.notify_all();
    end_loads(lock);
    throw;
  }

  lock.lock();
  rec.count.store(1, std::memory_order_release);
  rec.state = detail::library_state::loaded;
  rec.loading_thread = {};
  remember(rec, spelling);
  remember(rec, rec.path);
  changed_.notify_all();
  end_loads(lock);
  return library_lease(&rec);
}

inline void library_loader::load(record& rec, const load_options& options) {
  // A library still mapped now will not run its static constructors again:
  // its registrations must be replayed. Holding the probe's reference until
  // our own dlopen returns keeps that mapping the same one.
  void* resident = detail::probe_mapped(rec.path);
  KEEL_SCOPE_EXIT {
    if (resident != nullptr) ::dlclose(resident);
  };

  // Guards run in reverse order: on failure, first the library's entries are
  // destroyed (their code is still mapped), then it is unloaded.
  struct stat file_status {};
  if (resident == nullptr && ::stat(rec.path.c_str(), &file_status) == 0) {
    const std::string truncated = detail::truncated_segments(rec.path, static_cast<std::uint64_t>(file_status.st_size));
    if (!truncated.empty()) fail(errc::library_load_failed, rec.path, truncated);
  }

  boost::dll::shared_library library;
  std::error_code ec;
  library.load(rec.path, options.mode, ec);
  if (ec) {
    // Boost.DLL reports only a generic code: ask dlopen itself for the reason.
    std::string reason = "not a loadable library";
    if (void* again = ::dlopen(rec.path.c_str(), static_cast<int>(options.mode))) {
      ::dlclose(again);
    } else if (const char* text = ::dlerror()) {
      reason += std::string(" (") + text + ")";
    }
    fail(errc::library_load_failed, rec.path, reason);
  }
  scope_fail unload_on_failure{[&]() noexcept { library.unload(); }};

  detail::load_context ctx;
  ctx.owner = rec.id;
  ctx.path = rec.path;
  ctx.thread = std::this_thread::get_id();
  {
    struct link_map* map = nullptr;
    if (::dlinfo(library.native(), RTLD_DI_LINKMAP, &map) != 0) map = nullptr;
    ctx.link_map = map;
    std::lock_guard<std::mutex> lock(mutex_);
    rec.link_map = map;
  }
  scope_fail abort_on_failure{[&]() noexcept {
    try {
      for (auto* h : current_hooks()) h->abort_load(ctx);
    } catch (...) {
      report_current_exception("library_loader::acquire (rolling back registrations)");
    }
  }};

  int (*init)() = library.has(entry_point::init) ? &library.get<int()>(entry_point::init) : nullptr;
  int (*fini)() = library.has(entry_point::fini) ? &library.get<int()>(entry_point::fini) : nullptr;
  void (*register_entries)() =
      library.has(entry_point::register_entries) ? &library.get<void()>(entry_point::register_entries) : nullptr;
  if (options.require_init && init == nullptr) {
    fail(errc::symbol_not_found, rec.path, std::string("the entry point ") + entry_point::init + " is missing");
  }

  const auto* map = static_cast<const struct link_map*>(ctx.link_map);
  const std::uintptr_t base = map != nullptr ? static_cast<std::uintptr_t>(map->l_addr) : 0;
  if (resident != nullptr && base == rec.base) {
    // Same mapping as at our last unload: the registrar objects are where
    // they were, and their constructors will not run again.
    std::vector<detail::registrar_base*> replay = rec.replay;
    for (auto* r : replay) r->invoke();
  }
  rec.replay.clear();

  auto call = [&](const char* name, auto&& fn) {
    try {
      return fn();
    } catch (const std::exception& e) {
      fail(errc::library_load_failed, rec.path, std::string(name) + " threw: " + e.what());
    } catch (...) {
      fail(errc::library_load_failed, rec.path, std::string(name) + " threw an unknown exception");
    }
  };
  if (register_entries != nullptr) call(entry_point::register_entries, [&] { register_entries(); });
  if (init != nullptr) {
    const int status = call(entry_point::init, [&] { return init(); });
    if (status != 0) {
      fail(errc::library_load_failed, rec.path,
           std::string(entry_point::init) + " reported failure (" + std::to_string(status) + ")");
    }
  }
  // From here a failure must also undo a successful init.
  rec.fini = fini;
  scope_fail finalize_on_failure{[&]() noexcept { finalize(rec); }};
  // Taken now, not before dlopen: it includes registries the plugin's
  // constructors created.
  for (auto* h : current_hooks()) h->commit_load(ctx);

  rec.library = std::move(library);
  unload_on_failure.dismiss();
  abort_on_failure.dismiss();
  finalize_on_failure.dismiss();
}

inline void library_loader::finalize(record& rec) noexcept {
  if (rec.fini == nullptr) return;
  try {
    const int status = rec.fini();
    if (status != 0) {
      const std::string message = rec.path + ": " + entry_point::fini + " reported failure (" +
                                  std::to_string(status) + "); the library is unloaded anyway";
      report_error(make_error_code(errc::library_load_failed), "library_lease::release", message.c_str());
    }
  } catch (...) {
    report_current_exception("library_lease::release (keel_plugin_fini threw; the library is unloaded anyway)");
  }
  rec.fini = nullptr;
}

inline release_result library_loader::release(record& rec) noexcept {
  if (rec.count.fetch_sub(1, std::memory_order_acq_rel) != 1) return release_result::shared;

  std::vector<detail::registry_hooks*> hooks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rec.state = detail::library_state::unloading;
    hooks = hooks_;
  }
  // Entries go first: each registry's exclusive lock waits for callbacks
  // still running them, so no entry runs once finalisation has begun (the
  // mirror of the load, where entries appear only after init succeeded), and
  // they are destroyed while the library's code is still mapped.
  // A registry whose lock this thread holds (the last lease dropped inside
  // a callback it runs) cannot remove the entries: waiting for its own lock
  // would deadlock, and unloading under them would leave them dangling. The
  // loader then keeps this last reference, and the library stays loaded with
  // its entries for the rest of the process: reported, not std::terminate.
  bool removable = true;
  for (auto* h : hooks) removable = removable && h->can_remove_owner();
  std::vector<detail::registrar_base*> replay;
  for (std::size_t i = 0; removable && i < hooks.size(); ++i) removable = hooks[i]->remove_owner(rec.id, replay);
  if (!removable) {
    const std::string message = rec.path +
                                ": the last lease was released on a thread that holds a registry's lock (inside a "
                                "callback the registry runs); removing the library's entries would deadlock, so the "
                                "library stays loaded, its last lease kept by the loader";
    report_error(make_error_code(errc::would_deadlock), "library_lease::release", message.c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    rec.count.store(1, std::memory_order_release);
    rec.state = detail::library_state::loaded;
    changed_.notify_all();
    return release_result::shared;
  }
  finalize(rec);
  const auto* map = static_cast<const struct link_map*>(rec.link_map);
  const std::uintptr_t base = map != nullptr ? static_cast<std::uintptr_t>(map->l_addr) : 0;
  rec.library.unload();

  release_result result = release_result::unloaded;
  if (void* still = detail::probe_mapped(rec.path)) {
    ::dlclose(still);
    result = release_result::still_mapped;
  }

  std::lock_guard<std::mutex> lock(mutex_);
  if (result == release_result::still_mapped) {
    rec.replay = std::move(replay);
    rec.base = base;
  } else {
    rec.replay.clear();
    rec.base = 0;
  }
  rec.link_map = nullptr;
  // Forget the spellings: if the file is replaced before the next load, the
  // next acquisition must look at the file system again.
  for (const auto& s : rec.spellings) {
    auto it = spellings_.find(s);
    if (it != spellings_.end()) spellings_.erase(it);
  }
  rec.spellings.clear();
  rec.state = detail::library_state::unloaded;
  changed_.notify_all();
  return result;
}

inline release_result library_lease::release() noexcept {
  detail::library_record* rec = std::exchange(record_, nullptr);
  if (rec == nullptr) return release_result::empty;
  return rec->loader->release(*rec);
}

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
