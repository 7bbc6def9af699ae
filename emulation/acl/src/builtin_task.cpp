// SPDX-License-Identifier: Apache-2.0
// The runtime's built-in tasks (12_execution_control.md): aclrtReduceAsync
// combines a source into a destination element by element (SUM, MAX, MIN),
// in the stream's order, as the device's SDMA engine does. A task of its
// stream like any other: captured, replayed, ordered by events.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "detail/capture_rules.hpp"
#include "detail/state.hpp"
#include "keel/ops/dtype.hpp"

namespace keel::acl_emulation::detail {
namespace {

template <class T>
T combine(T a, T b, int kind) noexcept {
  switch (kind) {
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX: return std::max(a, b);
    case ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN: return std::min(a, b);
    default: return static_cast<T>(a + b);  // ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM
  }
}

// dst[i] = dst[i] (op) src[i]; T is the stored type, loaded and stored
// through memcpy (device memory carries no C++ objects), computed in C.
template <class T, class C = T, class Load, class Store>
void reduce_elements(void* dst, const void* src, std::uint64_t n, int kind, Load load, Store store) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  for (std::uint64_t i = 0; i < n; ++i) {
    T a{}, b{};
    std::memcpy(&a, d + i * sizeof(T), sizeof(T));
    std::memcpy(&b, s + i * sizeof(T), sizeof(T));
    const T r = store(combine<C>(load(a), load(b), kind));
    std::memcpy(d + i * sizeof(T), &r, sizeof(T));
  }
}

template <class T>
void reduce_plain(void* dst, const void* src, std::uint64_t n, int kind) {
  reduce_elements<T>(dst, src, n, kind, [](T v) { return v; }, [](T v) { return v; });
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtReduceAsync(void* dst, const void* src, std::uint64_t count, aclrtReduceKind kind, aclDataType type,
                          aclrtStream stream, void* reserve) {
  static constexpr const char* api = "aclrtReduceAsync";
  return guarded(api, call::other, [&] {
    require(dst, api, "dst");
    require(src, api, "src");
    if (reserve != nullptr) throw_status(ACL_ERROR_INVALID_PARAM, "reserve must be NULL");
    const int op = raw(kind);
    if (op == ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL)
      throw_status(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   "ACL_RT_MEMCPY_SDMA_AUTOMATIC_EQUAL: CANN documents no result for it, so the emulation has none");
    if (op != ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM && op != ACL_RT_MEMCPY_SDMA_AUTOMATIC_MAX &&
        op != ACL_RT_MEMCPY_SDMA_AUTOMATIC_MIN)
      throw_status(ACL_ERROR_INVALID_PARAM, "unknown aclrtReduceKind " + std::to_string(op));
    // The data types the documentation lists for Atlas A2, the emulated device's series.
    const int dtype = raw(type);
    const std::size_t element = dtype == ACL_INT8                                                ? 1
                                : dtype == ACL_INT16 || dtype == ACL_FLOAT16 || dtype == ACL_BF16 ? 2
                                : dtype == ACL_INT32 || dtype == ACL_FLOAT                        ? 4
                                                                                                  : 0;
    if (element == 0)
      throw_status(ACL_ERROR_INVALID_PARAM, "data type " + std::to_string(dtype) +
                                                " is not one of int8, int16, int32, fp16, fp32, bf16");
    if (count % element != 0)
      throw_status(ACL_ERROR_INVALID_PARAM, "count " + std::to_string(count) + " bytes is not a whole number of " +
                                                std::to_string(element) + "-byte elements");
    // CANN: dst and src are on the stream's device.
    hb::stream_handle s = current_device_stream(stream, api);
    cann_rules::check_issue(stream);
    const std::uint64_t n = count / element;
    hb::launch_host(s, [dst, src, n, op, dtype] {
      switch (dtype) {
        case ACL_INT8: reduce_plain<std::int8_t>(dst, src, n, op); break;
        case ACL_INT16: reduce_plain<std::int16_t>(dst, src, n, op); break;
        case ACL_INT32: reduce_plain<std::int32_t>(dst, src, n, op); break;
        case ACL_FLOAT: reduce_plain<float>(dst, src, n, op); break;
        case ACL_FLOAT16:
          reduce_elements<std::uint16_t, float>(dst, src, n, op, keel::ops::half_bits_to_float,
                                                keel::ops::float_to_half_bits);
          break;
        default:  // ACL_BF16
          reduce_elements<std::uint16_t, float>(dst, src, n, op, keel::ops::bfloat16_bits_to_float,
                                                keel::ops::float_to_bfloat16_bits);
          break;
      }
    });
    cann_rules::note_task(stream);
  });
}

}  // extern "C"
