// SPDX-License-Identifier: Apache-2.0
// acl_base_rt.h's helpers (CANN's acl_base.h includes that header): data
// buffers (an address and a size the caller owns), element sizes and the
// float16 conversions. None touches a device, so none needs a context.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <unordered_set>

#include "detail/state.hpp"
#include "keel/ops/dtype.hpp"

struct aclDataBuffer {
  void* data;
  std::size_t size;
};

namespace keel::acl_emulation::detail {
namespace {
// The live data buffers: a destroyed or foreign one is refused, not read.
struct buffer_book {
  std::mutex m;
  std::unordered_set<const aclDataBuffer*> live;
};
buffer_book& buffers() {
  static buffer_book* const b = new buffer_book;  // never destroyed, as book()
  return *b;
}
bool live_buffer(const aclDataBuffer* b) {
  std::lock_guard<std::mutex> lock(buffers().m);
  return b != nullptr && buffers().live.count(b) != 0;
}
}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclDataBuffer* aclCreateDataBuffer(void* data, std::size_t size) {
  // CANN allows an empty buffer (null data, size 0) to stand for an empty tensor.
  auto* made = new (std::nothrow) aclDataBuffer{data, size};
  if (made == nullptr) return nullptr;
  try {
    std::lock_guard<std::mutex> lock(buffers().m);
    buffers().live.insert(made);
  } catch (...) {
    delete made;
    return nullptr;
  }
  return made;
}
aclError aclDestroyDataBuffer(const aclDataBuffer* dataBuffer) {
  static constexpr const char* api = "aclDestroyDataBuffer";
  if (dataBuffer == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "dataBuffer is null");
  {
    std::lock_guard<std::mutex> lock(buffers().m);
    if (buffers().live.erase(dataBuffer) == 0)
      return fail(ACL_ERROR_INVALID_PARAM, api, "dataBuffer is not a live aclDataBuffer");
  }
  delete dataBuffer;  // the data it described stays the caller's
  return ACL_SUCCESS;
}
aclError aclUpdateDataBuffer(aclDataBuffer* dataBuffer, void* data, std::size_t size) {
  if (!live_buffer(dataBuffer))
    return fail(ACL_ERROR_INVALID_PARAM, "aclUpdateDataBuffer", "dataBuffer is not a live aclDataBuffer");
  dataBuffer->data = data;
  dataBuffer->size = size;
  return ACL_SUCCESS;
}
void* aclGetDataBufferAddr(const aclDataBuffer* dataBuffer) {
  return live_buffer(dataBuffer) ? dataBuffer->data : nullptr;
}
std::size_t aclGetDataBufferSizeV2(const aclDataBuffer* dataBuffer) {
  return live_buffer(dataBuffer) ? dataBuffer->size : 0;
}

std::size_t aclDataTypeSize(aclDataType dataType) {
  switch (raw(dataType)) {
    case ACL_BOOL:
    case ACL_INT8:
    case ACL_UINT8: return 1;
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_INT16:
    case ACL_UINT16: return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_COMPLEX32: return 4;
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_DOUBLE:
    case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;  // no whole-byte element: undefined, strings, 4- and 1-bit types
  }
}
float aclFloat16ToFloat(aclFloat16 value) { return keel::ops::half_bits_to_float(value); }
aclFloat16 aclFloatToFloat16(float value) { return keel::ops::float_to_half_bits(value); }

}  // extern "C"
