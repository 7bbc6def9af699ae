// SPDX-License-Identifier: Apache-2.0
// keel's records of one kind of ACL handle (aclrtStream, aclrtEvent,
// aclmdlRI, aclrtTaskGrp), by handle: how a native handle a user holds
// finds the record keel keeps its books in.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "keel/core/error.hpp"
#include "keel/runtime/backend/native.hpp"

#include "keel/core/config.hpp"

KEEL_BEGIN_NAMESPACE namespace acl::detail {

/// @cond
// Every live record of one kind on one device, keel-made and adopted alike,
// by ACL handle, so a native handle (another framework's, or a keel
// handle's native_handle()) finds the one record its books are in.
//
// A record is owned either by a keel owner (stream, event, model, task
// group: `adopted` false) or by the device (`adopted` true: viewed from
// elsewhere, or given up by release()); the device drops its own records
// when forgotten (device::forget_*) or destroyed. Ownership changes hands
// only under the registry's lock.
//
// Cost: a record made by keel is added on creation and removed on
// destruction (a lock and a hash-map insert or erase beside the ACL call,
// which costs far more); finding a record from a native handle is a lock
// and a lookup, paid only by the native-handle constructors and
// from_native_handle, never by a call on a handle (a handle holds its
// record). Thread safety: every member takes the registry's lock.
template <class Box>
class record_registry {
 public:
  using native_type = void*;

  // A record keel made for a handle it owns (creation). Throws std::bad_alloc.
  void add(native_type native, Box* box) {
    std::lock_guard<std::mutex> lock(m_);
    map_[native] = box;
  }
  // The record goes away (its owner destroys it): the handle may be reused.
  void remove(native_type native, const Box* box) noexcept {
    std::lock_guard<std::mutex> lock(m_);
    auto it = map_.find(native);
    if (it != map_.end() && it->second == box) map_.erase(it);
  }

  // The record of @p native for a view or an owner. Found: a view shares
  // it; an owner takes it from the device (refused when a keel owner has it).
  // Not found: make() makes one (or throws when keel cannot keep books for
  // a handle it did not make). check(box) may refuse a found record.
  template <class Make, class Check>
  Box* find_or_make(native_type native, adoption how, const char* api, const char* what, Make&& make,
                    Check&& check) {
    std::lock_guard<std::mutex> lock(m_);
    auto it = map_.find(native);
    if (it != map_.end()) {
      Box* box = it->second;
      check(*box);
      if (how == adoption::own) {
        if (!box->adopted.load(std::memory_order_relaxed))
          // keel's errc, qualified: inside keel::acl, errc is ACL's status enum
          // once keel/acl/status.hpp was included before this header.
          ::keel::detail::throw_composed(::keel::errc::invalid_parameter, api,
                                         {"a keel ", what, " owns this ACL handle already (release() it first)"});
        box->adopted.store(false, std::memory_order_relaxed);
      }
      return box;
    }
    std::unique_ptr<Box> box = make();
    box->adopted.store(how == adoption::view, std::memory_order_relaxed);
    map_.emplace(native, box.get());  // may throw: nothing taken yet
    return box.release();
  }

  // Calls visit(box) with the record of @p native, if it has one, under the
  // registry's lock (so the record cannot go meanwhile); whether it had one.
  template <class Visit>
  bool visit(native_type native, Visit&& visit) {
    std::lock_guard<std::mutex> lock(m_);
    auto it = map_.find(native);
    if (it == map_.end()) return false;
    visit(*it->second);
    return true;
  }

  // An owner gives its record up to the device (release()).
  void give_to_device(Box* box) noexcept {
    std::lock_guard<std::mutex> lock(m_);
    box->adopted.store(true, std::memory_order_relaxed);
  }

  // Takes a device-owned record out (device::forget_*): null when there is
  // none, or when a keel owner has it (forgetting it would pull it from under the owner).
  Box* take_device_record(native_type native) noexcept {
    std::lock_guard<std::mutex> lock(m_);
    auto it = map_.find(native);
    if (it == map_.end() || !it->second->adopted.load(std::memory_order_relaxed)) return nullptr;
    Box* box = it->second;
    map_.erase(it);
    return box;
  }

  // Whether @p pred holds for a record (a refusal's diagnosis: a scan).
  template <class Pred>
  bool any_of(Pred&& pred) {
    std::lock_guard<std::mutex> lock(m_);
    for (const auto& entry : map_)
      if (pred(*entry.second)) return true;
    return false;
  }

  // Every device-owned record, taken out (the device's destruction).
  template <class F>
  void drain_device_records(F&& drop) noexcept {
    std::unordered_map<native_type, Box*> all;
    {
      std::lock_guard<std::mutex> lock(m_);
      all.swap(map_);
    }
    for (auto& entry : all)
      if (entry.second->adopted.load(std::memory_order_relaxed)) drop(entry.second);
  }

 private:
  std::mutex m_;
  std::unordered_map<native_type, Box*> map_;
};
/// @endcond

} KEEL_END_NAMESPACE  // namespace keel::acl::detail
