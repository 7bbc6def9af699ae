// SPDX-License-Identifier: Apache-2.0
// library_loader: the table of leased libraries, which loads a library on its
// first lease (over Boost.DLL, after probing the file), runs its entry points,
// commits its registrations, and finalises and unloads it on its last.
#pragma once

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

#include "keel/core/error.hpp"
#include "keel/core/scope_guard.hpp"
#include "keel/plugin/detail/elf_probe.hpp"
#include "keel/plugin/detail/registry_hooks.hpp"
#include "keel/plugin/library_lease.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

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

KEEL_END_NAMESPACE  // namespace keel

#include "keel/plugin/impl/library_lease.ipp"
