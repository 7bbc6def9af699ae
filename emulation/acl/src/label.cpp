// SPDX-License-Identifier: Apache-2.0
// Labels (10_label_management.md): aclrtCreateLabel, aclrtSetLabel,
// aclrtDestroyLabel, aclrtCreateLabelList, aclrtDestroyLabelList and
// aclrtSwitchLabelByIndex, over the host backend's built models (a label is
// a marked place in a bound stream's part, a switch by label index a jump to
// one of them, placed when the build ends).
//
// CANN's rules the emulation checks here: at most 65535 labels in a process
// (ACL_ERROR_RT_RESOURCE_ALLOC_FAIL beyond), a label list of (0, 65535]
// labels, each a live label, and a switch's maxValue equal to its list's
// size (ACL_ERROR_INVALID_PARAM otherwise); a label and a switch go on a
// stream bound to a model being built (the built-model rules, as
// aclrtSwitchStream). The emulation's choices: a label is set once
// (ACL_ERROR_INVALID_PARAM for a second aclrtSetLabel); a label keeps its
// identity after aclrtDestroyLabel for the models that placed it (a model's
// jumps are fixed when its build ends), and a model whose switch names a label
// no bound stream of it set does not end its build.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "detail/state.hpp"

namespace keel::acl_emulation::detail {
namespace {

// Labels are named to the host backend by a number never reused, so a
// destroyed label's address taken by a new one names a different label.
struct label_object {
  std::uintptr_t key = 0;
  bool set = false;
};
struct label_list_object {
  std::vector<std::uintptr_t> keys;
};

constexpr std::size_t max_labels = 65535;

struct label_books {
  std::mutex m;
  std::unordered_set<label_object*> labels;
  std::unordered_set<label_list_object*> lists;
  std::uintptr_t next_key = 1;
};
label_books& labels() {
  static auto* b = new label_books;  // as the other books: never destroyed
  return *b;
}

label_object* label_of(aclrtLabel label, const char* function) {
  if (label == nullptr) throw_rule(errc::null_parameter, function, "label is null");
  auto* l = static_cast<label_object*>(label);
  if (!labels().labels.count(l)) throw_rule(errc::invalid_handle, function, "label is not a live label");
  return l;
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtCreateLabel(aclrtLabel* label) {
  static constexpr const char* api = "aclrtCreateLabel";
  return guarded(api, call::other, [&] {
    require(label, api, "label");
    label_books& b = labels();
    std::lock_guard<std::mutex> lock(b.m);
    if (b.labels.size() >= max_labels)
      throw_status(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, "a process has at most 65535 labels");
    auto l = std::make_unique<label_object>();
    l->key = b.next_key;
    b.labels.insert(l.get());
    ++b.next_key;
    *label = l.release();
  });
}

aclError aclrtDestroyLabel(aclrtLabel label) {
  static constexpr const char* api = "aclrtDestroyLabel";
  return guarded(api, call::other, [&] {
    label_books& b = labels();
    std::lock_guard<std::mutex> lock(b.m);
    label_object* l = label_of(label, api);
    b.labels.erase(l);
    delete l;
  });
}

aclError aclrtSetLabel(aclrtLabel label, aclrtStream stream) {
  static constexpr const char* api = "aclrtSetLabel";
  return guarded(api, call::other, [&] {
    label_books& b = labels();
    std::uintptr_t key = 0;
    {
      std::lock_guard<std::mutex> lock(b.m);
      label_object* l = label_of(label, api);
      if (l->set) throw_status(ACL_ERROR_INVALID_PARAM, "the label is already set on a stream");
      key = l->key;
    }
    hb::set_label(stream_of(stream, api), key);
    std::lock_guard<std::mutex> lock(b.m);
    if (b.labels.count(static_cast<label_object*>(label))) static_cast<label_object*>(label)->set = true;
  });
}

aclError aclrtCreateLabelList(aclrtLabel* labels_in, std::size_t num, aclrtLabelList* labelList) {
  static constexpr const char* api = "aclrtCreateLabelList";
  return guarded(api, call::other, [&] {
    require(labels_in, api, "labels");
    require(labelList, api, "labelList");
    if (num == 0 || num > max_labels)
      throw_status(ACL_ERROR_INVALID_PARAM, "num " + std::to_string(num) + " is outside (0, 65535]");
    auto list = std::make_unique<label_list_object>();
    list->keys.reserve(num);
    label_books& b = labels();
    std::lock_guard<std::mutex> lock(b.m);
    for (std::size_t i = 0; i < num; ++i) list->keys.push_back(label_of(labels_in[i], api)->key);
    b.lists.insert(list.get());
    *labelList = list.release();
  });
}

aclError aclrtDestroyLabelList(aclrtLabelList labelList) {
  static constexpr const char* api = "aclrtDestroyLabelList";
  return guarded(api, call::other, [&] {
    if (labelList == nullptr) throw_rule(errc::null_parameter, api, "labelList is null");
    label_books& b = labels();
    std::lock_guard<std::mutex> lock(b.m);
    auto* list = static_cast<label_list_object*>(labelList);
    if (!b.lists.erase(list)) throw_rule(errc::invalid_handle, api, "labelList is not a live label list");
    delete list;
  });
}

aclError aclrtSwitchLabelByIndex(void* ptr, std::uint32_t maxValue, aclrtLabelList labelList, aclrtStream stream) {
  static constexpr const char* api = "aclrtSwitchLabelByIndex";
  return guarded(api, call::other, [&] {
    if (ptr == nullptr) throw_rule(errc::null_parameter, api, "ptr (the label index in device memory) is null");
    if (labelList == nullptr) throw_rule(errc::null_parameter, api, "labelList is null");
    std::vector<std::uintptr_t> keys;
    {
      label_books& b = labels();
      std::lock_guard<std::mutex> lock(b.m);
      auto* list = static_cast<label_list_object*>(labelList);
      if (!b.lists.count(list)) throw_rule(errc::invalid_handle, api, "labelList is not a live label list");
      if (maxValue != list->keys.size())
        throw_status(ACL_ERROR_INVALID_PARAM, "maxValue " + std::to_string(maxValue) + " is not the label list's " +
                                                  std::to_string(list->keys.size()) + " labels");
      keys = list->keys;
    }
    hb::switch_label(stream_of(stream, api), ptr, std::move(keys));
  });
}

}  // extern "C"
