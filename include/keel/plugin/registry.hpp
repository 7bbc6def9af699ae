// SPDX-License-Identifier: Apache-2.0
// registry<Entry, MutexPolicy>: named entries owned by the plugin (or the
// host) that registered them, run under a shared lock, and safe to register
// into from static constructors while dlopen holds the C library's loader lock.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "keel/core/error.hpp"
#include "keel/core/mutex_policy.hpp"
#include "keel/core/scope_guard.hpp"
#include "keel/plugin/library_lease.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE

/**
 * @brief Who registered an entry: the host program or a leased library.
 * A plain value (a copy taken under the registry's lock); nothing throws but allocation.
 */
struct entry_owner {
  bool host = true;     ///< registered by the host program (not removed by any release)
  std::string library;  ///< canonical path of the owning library, empty for the host
};

namespace detail {

inline constexpr std::size_t reader_stripes = 8;

// Each thread reads through its own stripe of a registry's lock, so readers
// on different threads never write the same cache line. A thread takes the
// least used stripe when it first reads and gives it back when it exits, so
// up to reader_stripes threads reading at once never share one.
class reader_stripe_pool {
 public:
  std::size_t take() noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t best = 0;
    for (std::size_t i = 1; i < reader_stripes; ++i) {
      if (users_[i] < users_[best]) best = i;
    }
    ++users_[best];
    return best;
  }
  void give_back(std::size_t stripe) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    --users_[stripe];
  }
  // Never destroyed: threads may exit after static destruction began.
  static reader_stripe_pool& instance() {
    static reader_stripe_pool* const pool = new reader_stripe_pool;
    return *pool;
  }

 private:
  std::mutex mutex_;
  std::array<std::size_t, reader_stripes> users_{};
};

struct reader_stripe {
  reader_stripe() noexcept : index(reader_stripe_pool::instance().take()) {}
  ~reader_stripe() { reader_stripe_pool::instance().give_back(index); }
  reader_stripe(const reader_stripe&) = delete;
  reader_stripe& operator=(const reader_stripe&) = delete;
  const std::size_t index;
};

// The first call on a thread registers a thread_local destructor, which takes
// the C library's loader lock: callers ask before taking any lock of ours.
inline std::size_t reader_slot() {
  thread_local const reader_stripe stripe;
  return stripe.index;
}

}  // namespace detail

/**
 * @brief Named entries (passes, kernels, factories), each owned by whoever
 * registered it: a library being leased, or the host program. Entries are
 * looked up and run under a shared lock and changed under an exclusive one;
 * when the last lease on a library goes, its entries go first.
 *
 * Ownership: owns its entries; attaches itself to a library_loader, which must
 * outlive it (global() always does). Not copyable or movable. Thread safety: every
 * member is thread-safe unless the policy is null_mutex_policy; do not destroy a
 * registry while a lease is being acquired or released. Exceptions: add and
 * remove give the strong guarantee; run and visit propagate what the entry or
 * the visitor throws, with the lock released.
 *
 * @code
 * using pass = void (*)(graph&);
 * keel::registry<pass>& passes() { static keel::registry<pass> r; return r; }
 * // in a plugin, at namespace scope:
 * KEEL_REGISTER(passes(), "fold_constants", &fold_constants);
 * // in the host:
 * passes().run("fold_constants", g);
 * @endcode
 *
 * Registration during a load. From the moment a lease starts loading a
 * library until it has committed, every add() (from any thread) only appends
 * to a staging list under a small mutex that is never held across anything
 * else; the acquiring thread commits the staged entries under the exclusive
 * lock after dlopen has returned. So a static constructor never waits for the
 * registry lock (no self-deadlock inside dlopen), and nobody waits for the C
 * library's loader lock while holding a registry lock the constructor needs
 * (no ABBA with dl_load_lock). An add() made by the host while another thread
 * loads becomes visible when that load finishes. Entries made through
 * KEEL_REGISTER or add_from() are attributed by address, so a plugin's own
 * threads register for the plugin; a plain add() on the loading thread belongs
 * to the library being loaded, elsewhere to the host.
 *
 * Do not call into the registry, nor acquire the first lease of a library,
 * nor release the last one, from inside a callback it runs: the shared lock
 * is held there. With checked_mutex_policy each is caught: a call throws
 * would_deadlock, and a last release (noexcept) reports it to the error
 * handler and leaves the library loaded, its entries in place. Load plugins
 * through leases: a library opened with a bare dlopen registers outside any
 * staging, waiting for the exclusive lock while holding the loader lock.
 */
template <class Entry, class MutexPolicy = std_shared_mutex_policy>
class registry final : private detail::registry_hooks {
  static_assert(is_mutex_policy_v<MutexPolicy>, "registry<Entry, MutexPolicy>: MutexPolicy must be a mutex policy");

 public:
  /// The type of a registered entry.
  using entry_type = Entry;
  /// The mutex policy.
  using policy_type = MutexPolicy;
  /// The mutex type the policy locks.
  using mutex_type = typename MutexPolicy::mutex_type;

  /** @brief An empty registry whose plugin entries follow @p loader's leases. */
  explicit registry(library_loader& loader = library_loader::global()) : loader_(&loader) {
    loader_->attach(this);
  }
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;
  ~registry() { loader_->detach(this); }

  /**
   * @brief Adds @p entry under @p name. Owned by the library the calling
   * thread is loading (from a static constructor or keel_plugin_register), else
   * by the host.
   * @throws keel::error (errc::invalid_parameter) if the name is taken; a
   * registration staged during a load is checked when the load commits.
   */
  void add(std::string name, Entry entry) { add_impl(std::move(name), std::move(entry), nullptr, nullptr); }

  /**
   * @brief Adds @p entry, owned by the leased library that contains
   * @p module_address (any function or static object of that library), else by
   * the host. For a plugin's own threads, which are not the loading thread.
   */
  void add_from(const void* module_address, std::string name, Entry entry) {
    add_impl(std::move(name), std::move(entry), module_address, nullptr);
  }

  /** @cond detail */
  // KEEL_REGISTER's path: the registrar is both the address and the replay.
  void add_registered(detail::registrar_base& registrar, std::string name, Entry entry) {
    add_impl(std::move(name), std::move(entry), &registrar, &registrar);
  }
  /** @endcond */

  /** @brief Removes the entry named @p name, whoever owns it; false if there was none. */
  bool remove(std::string_view name) {
    exclusive_lock lock(*this);
    auto it = entries_.find(name);
    if (it == entries_.end()) return false;
    entries_.erase(it);
    return true;
  }

  /** @brief Calls f(const Entry&) under the shared lock; false (f not called) if there is no such entry. */
  template <class F>
  bool visit(std::string_view name, F&& f) const {
    shared_lock lock(*this);
    auto it = entries_.find(name);
    if (it == entries_.end()) return false;
    std::forward<F>(f)(static_cast<const Entry&>(it->second.entry));
    return true;
  }

  /**
   * @brief Invokes the entry named @p name with @p args under the shared lock
   * and returns its result.
   * @throws keel::error (errc::invalid_parameter) if there is no such entry.
   */
  template <class... Args>
  decltype(auto) run(std::string_view name, Args&&... args) const {
    shared_lock lock(*this);
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      ::keel::detail::throw_composed(errc::invalid_parameter, "registry::run", {"no entry named '", name, "'"});
    }
    return std::invoke(it->second.entry, std::forward<Args>(args)...);
  }

  /** @brief Calls f(name, const Entry&) for every entry, in name order, under one shared lock. */
  template <class F>
  void for_each(F&& f) const {
    shared_lock lock(*this);
    for (const auto& [name, n] : entries_) f(std::string_view(name), static_cast<const Entry&>(n.entry));
  }

  /// Whether an entry named @p name is registered.
  bool contains(std::string_view name) const {
    shared_lock lock(*this);
    return entries_.find(name) != entries_.end();
  }
  /// How many entries are registered.
  std::size_t size() const {
    shared_lock lock(*this);
    return entries_.size();
  }
  /// The registered names, a snapshot.
  std::vector<std::string> names() const {
    shared_lock lock(*this);
    std::vector<std::string> result;
    result.reserve(entries_.size());
    for (const auto& kv : entries_) result.push_back(kv.first);
    return result;
  }
  /** @brief Who owns the entry named @p name; nullopt if there is none. */
  std::optional<entry_owner> owner(std::string_view name) const {
    shared_lock lock(*this);
    auto it = entries_.find(name);
    if (it == entries_.end()) return std::nullopt;
    return entry_owner{it->second.owner == detail::host_owner, it->second.owner_path};
  }
  /** @brief Registrations waiting for a load in progress to finish. */
  std::size_t staged() const {
    std::lock_guard<std::mutex> lock(staging_mutex_);
    return staged_.size();
  }

 private:
  struct node {
    Entry entry;
    detail::owner_id owner = detail::host_owner;
    std::string owner_path;
    detail::registrar_base* registrar = nullptr;
  };
  struct staged_item {
    std::string name;
    Entry entry;
    const void* anchor;
    detail::registrar_base* registrar;
    std::thread::id thread;
  };

  // Readers take one stripe, writers take all of them in order: readers on
  // different threads touch different cache lines (a single shared_mutex's
  // reader count would bounce between cores on every lookup).
  static constexpr std::size_t stripe_count = MutexPolicy::is_thread_safe ? detail::reader_stripes : 1;
  struct alignas(128) stripe {
    mutable mutex_type mutex;
  };

  class shared_lock {
   public:
    // The stripe is chosen (and on a thread's first read, registered) before
    // any lock is taken.
    explicit shared_lock(const registry& r) : mutex_(r.stripes_[stripe_index()].mutex) {
      mutex_.lock_shared();
    }
    ~shared_lock() { mutex_.unlock_shared(); }
    shared_lock(const shared_lock&) = delete;
    shared_lock& operator=(const shared_lock&) = delete;

   private:
    static std::size_t stripe_index() {
      if constexpr (stripe_count == 1) {
        return 0;
      } else {
        return detail::reader_slot();
      }
    }
    mutex_type& mutex_;
  };

  class exclusive_lock {
   public:
    explicit exclusive_lock(const registry& r) : r_(r) {
      std::size_t locked = 0;
      // checked_mutex_policy may throw would_deadlock part-way: give back what we took.
      scope_fail unlock_taken{[&]() noexcept {
        while (locked > 0) r_.stripes_[--locked].mutex.unlock();
      }};
      for (; locked < stripe_count; ++locked) r_.stripes_[locked].mutex.lock();
    }
    ~exclusive_lock() {
      for (std::size_t i = stripe_count; i > 0; --i) r_.stripes_[i - 1].mutex.unlock();
    }
    exclusive_lock(const exclusive_lock&) = delete;
    exclusive_lock& operator=(const exclusive_lock&) = delete;

   private:
    const registry& r_;
  };

  [[noreturn]] static void name_taken(const char* api, const std::string& name, const std::string& owner_path) {
    if (owner_path.empty())
      ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                     {"an entry named '", name, "' is already registered (by the host)"});
    ::keel::detail::throw_composed(errc::invalid_parameter, api,
                                   {"an entry named '", name, "' is already registered (by ", owner_path, ")"});
  }

  void add_impl(std::string name, Entry entry, const void* anchor, detail::registrar_base* registrar) {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(staging_mutex_);
        if (loads_in_progress_ > 0) {
          staged_.push_back(
              staged_item{std::move(name), std::move(entry), anchor, registrar, std::this_thread::get_id()});
          return;
        }
      }
      detail::resolution where;
      // No lock of ours is held here: resolve() may wait for the C library's loader lock.
      if (anchor != nullptr) where = loader_->resolve(anchor);
      if (where.kind == detail::resolution::other_load) {
        // Between a load's start and its registries' staging, or its end and
        // its state update: a moment; then this registration stages or resolves.
        std::this_thread::yield();
        continue;
      }
      exclusive_lock lock(*this);
      auto [it, inserted] =
          entries_.try_emplace(std::move(name), node{std::move(entry), where.owner, std::move(where.path), registrar});
      if (!inserted) name_taken("registry::add", it->first, it->second.owner_path);
      return;
    }
  }

  // --- detail::registry_hooks: called by the loader, never inside dlopen ---

  void begin_load(std::thread::id loading_thread) noexcept override {
    std::lock_guard<std::mutex> lock(staging_mutex_);
    ++loads_in_progress_;
    try {
      loading_threads_.push_back(loading_thread);
    } catch (...) {
      // Only attribution by thread is lost: the plain add()s of this load go to the host.
      report_current_exception("registry: remembering a loading thread");
    }
  }

  void end_load(std::thread::id loading_thread) noexcept override {
    bool flush = false;
    {
      std::lock_guard<std::mutex> lock(staging_mutex_);
      auto it = std::find(loading_threads_.begin(), loading_threads_.end(), loading_thread);
      if (it != loading_threads_.end()) loading_threads_.erase(it);
      --loads_in_progress_;
      flush = loads_in_progress_ == 0 && !staged_.empty();
    }
    if (!flush) return;
    // Registrations that arrived after the last commit (the host's, a plugin
    // thread's): nothing is loading any more, so each has a final owner.
    try {
      detail::load_context none;
      commit(none);
    } catch (...) {
      report_current_exception("registry: committing registrations staged during a load");
    }
  }

  void commit_load(const detail::load_context& ctx) override { commit(ctx); }

  void abort_load(const detail::load_context& ctx) noexcept override {
    try {
      std::lock_guard<std::mutex> serial(commit_mutex_);
      std::vector<classified> items = take_staged(ctx);
      std::vector<staged_item> keep;
      for (auto& c : items) {
        // The failed library's own registrations die here, while its code is mapped.
        if (c.where.kind != detail::resolution::library || c.where.owner != ctx.owner) keep.push_back(std::move(c.item));
      }
      items.clear();
      put_back(keep);
      exclusive_lock lock(*this);
      for (auto it = entries_.begin(); it != entries_.end();) {
        it = it->second.owner == ctx.owner ? entries_.erase(it) : std::next(it);
      }
    } catch (...) {
      report_current_exception("registry: rolling back a failed load");
    }
  }

  bool can_remove_owner() const noexcept override {
    for (const stripe& s : stripes_) {
      if (detail::held_by_this_thread(s.mutex)) return false;
    }
    return true;
  }

  bool remove_owner(detail::owner_id owner, std::vector<detail::registrar_base*>& replay) noexcept override {
    std::optional<exclusive_lock> lock;
    try {
      lock.emplace(*this);  // checked_mutex_policy: would_deadlock, with nothing taken
    } catch (...) {
      report_current_exception("registry: removing a released library's entries");
      return false;
    }
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->second.owner != owner) {
        ++it;
        continue;
      }
      if (it->second.registrar != nullptr) {
        try {
          replay.push_back(it->second.registrar);
        } catch (...) {
          report_current_exception("registry: remembering a registration for the next load");
        }
      }
      it = entries_.erase(it);
    }
    return true;
  }

  struct classified {
    staged_item item;
    detail::resolution where;
  };

  // Takes the whole staging list and says where each registration belongs.
  // Caller holds commit_mutex_ (so no other commit sees a partial list) and
  // no other lock of ours: resolve() may wait for the loader lock.
  std::vector<classified> take_staged(const detail::load_context& ctx) {
    std::vector<staged_item> items;
    std::vector<std::thread::id> loading;
    {
      std::lock_guard<std::mutex> lock(staging_mutex_);
      items.swap(staged_);
      loading = loading_threads_;
    }
    scope_fail restore{[&]() noexcept { put_back_noexcept(items); }};
    std::vector<classified> result;
    result.reserve(items.size());
    for (auto& item : items) {
      detail::resolution where;
      if (item.anchor != nullptr) {
        where = loader_->resolve(item.anchor);
        if (where.owner != detail::host_owner && where.owner == ctx.owner) where.kind = detail::resolution::library;
      } else if (ctx.owner != detail::host_owner && item.thread == ctx.thread) {
        where.kind = detail::resolution::library;
        where.owner = ctx.owner;
        where.path = ctx.path;
      } else if (std::find(loading.begin(), loading.end(), item.thread) != loading.end() &&
                 item.thread != ctx.thread) {
        where.kind = detail::resolution::other_load;
      }
      result.push_back(classified{std::move(item), std::move(where)});
    }
    restore.dismiss();
    return result;
  }

  void put_back(std::vector<staged_item>& items) {
    if (items.empty()) return;
    std::lock_guard<std::mutex> lock(staging_mutex_);
    staged_.insert(staged_.end(), std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
    items.clear();
  }
  void put_back_noexcept(std::vector<staged_item>& items) noexcept {
    try {
      put_back(items);
    } catch (...) {
      report_current_exception("registry: keeping staged registrations");
    }
  }

  // Commits the library's registrations all or nothing, and everyone else's
  // one by one (a clash there is reported: the caller is long gone).
  void commit(const detail::load_context& ctx) {
    std::lock_guard<std::mutex> serial(commit_mutex_);
    std::vector<classified> items = take_staged(ctx);
    std::vector<staged_item> keep;
    keep.reserve(items.size());  // room for every item: keep_others below cannot allocate
    std::vector<classified> mine;
    std::vector<classified> others;
    for (auto& c : items) {
      if (c.where.kind == detail::resolution::other_load) {
        keep.push_back(std::move(c.item));
      } else if (ctx.owner != detail::host_owner && c.where.owner == ctx.owner) {
        mine.push_back(std::move(c));
      } else {
        others.push_back(std::move(c));
      }
    }
    items.clear();
    // On failure the library's registrations are dropped with `mine` (the
    // loader still has it mapped), the others wait for the next commit.
    scope_exit keep_others{[&]() noexcept {
      for (auto& c : others) keep.push_back(std::move(c.item));  // within the reserved capacity
      others.clear();
      put_back_noexcept(keep);
    }};

    exclusive_lock lock(*this);
    for (std::size_t i = 0; i < mine.size(); ++i) {
      const std::string& name = mine[i].item.name;
      auto it = entries_.find(name);
      if (it != entries_.end()) name_taken("library_loader::acquire", name, it->second.owner_path);
      for (std::size_t j = 0; j < i; ++j) {
        if (mine[j].item.name == name) name_taken("library_loader::acquire", name, ctx.path);
      }
    }
    std::vector<typename std::map<std::string, node, std::less<>>::iterator> inserted;
    inserted.reserve(mine.size());
    scope_fail undo{[&]() noexcept {
      for (auto it : inserted) entries_.erase(it);
    }};
    for (auto& c : mine) {
      inserted.push_back(entries_
                             .try_emplace(std::move(c.item.name),
                                          node{std::move(c.item.entry), ctx.owner, ctx.path, c.item.registrar})
                             .first);
    }
    undo.dismiss();
    for (auto& c : others) {
      auto [it, ok] = entries_.try_emplace(
          c.item.name, node{std::move(c.item.entry), c.where.owner, std::move(c.where.path), c.item.registrar});
      if (!ok) {
        const std::string message = "a registration staged during a load was dropped: the name '" + c.item.name +
                                    "' is already registered";
        report_error(make_error_code(errc::invalid_parameter), "registry::add", message.c_str());
      }
    }
    others.clear();
  }

  library_loader* loader_;
  std::array<stripe, stripe_count> stripes_;
  std::map<std::string, node, std::less<>> entries_;

  // Staging: touched by add() during loads; never held while anything else runs.
  mutable std::mutex staging_mutex_;
  std::vector<staged_item> staged_;
  std::vector<std::thread::id> loading_threads_;
  std::size_t loads_in_progress_ = 0;
  // Serialises commits, so one sees every registration another put back.
  std::mutex commit_mutex_;
};

KEEL_END_NAMESPACE  // namespace keel

/**
 * @brief At namespace scope in a plugin (or the host): registers @p name ->
 * entry into @p registry_expr from a static constructor. The registration is
 * owned by the module this line is in, and is replayed on the next lease if
 * the library stayed mapped and its constructors do not run again. Failures
 * (a taken name outside a load) go to keel's error handler; inside a load they
 * fail the acquisition.
 *
 * @code
 * KEEL_REGISTER(passes(), "fold_constants", &fold_constants);
 * @endcode
 */
#define KEEL_REGISTER(registry_expr, name, ...)                                                      \
  static ::keel::detail::registrar_base KEEL_DETAIL_CONCAT(keel_registrar_, __COUNTER__) {          \
    [](::keel::detail::registrar_base& keel_self) { (registry_expr).add_registered(keel_self, name, __VA_ARGS__); } \
  }
