// SPDX-License-Identifier: Apache-2.0
// The random-number task (12_execution_control.md, aclrtRandomNumAsync;
// 25-04_Structs.md, aclrtRandomNumTaskInfo): uniform, normal and truncated
// normal numbers and dropout bitmasks, generated on the stream in its order.
// CANN does not document its generator, so the numbers are the emulation's
// own: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011) keyed by the seed, its counter starting at the 64-bit
// offset at randomCounterAddr, which the task advances by what it drew.
// Uniform numbers fall in [min, max) (integers) and [min, max] (floating
// point, after rounding to the type); a truncated normal redraws beyond two
// standard deviations; a dropout bitmask holds one bit per element, set when
// the element is kept (probability 1 - ratio), least significant bit first.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "detail/capture_rules.hpp"
#include "detail/state.hpp"
#include "keel/ops/dtype.hpp"

namespace keel::acl_emulation::detail {
namespace {

class philox {
 public:
  philox(std::uint64_t seed, std::uint64_t offset) noexcept
      : key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}, block_(offset) {}
  std::uint32_t next() noexcept {
    if (used_ == 4) refill();
    return out_[used_++];
  }
  // A uniform double in [0, 1), from 53 random bits.
  double unit() noexcept {
    const std::uint64_t bits = (static_cast<std::uint64_t>(next()) << 21) ^ (next() >> 11);
    return static_cast<double>(bits & ((std::uint64_t{1} << 53) - 1)) * 0x1p-53;
  }
  std::uint64_t blocks_used() const noexcept { return blocks_; }

 private:
  void refill() noexcept {
    std::array<std::uint32_t, 4> c{static_cast<std::uint32_t>(block_), static_cast<std::uint32_t>(block_ >> 32), 0,
                                   0};
    std::array<std::uint32_t, 2> k = key_;
    for (int round = 0; round < 10; ++round) {
      const std::uint64_t p0 = std::uint64_t{0xD2511F53} * c[0], p1 = std::uint64_t{0xCD9E8D57} * c[2];
      c = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<std::uint32_t>(p1),
           static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<std::uint32_t>(p0)};
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    out_ = c;
    used_ = 0;
    ++block_;
    ++blocks_;
  }
  std::array<std::uint32_t, 2> key_;
  std::uint64_t block_;
  std::uint64_t blocks_ = 0;
  std::array<std::uint32_t, 4> out_{};
  int used_ = 4;
};

// A parameter's bytes: in the struct, or at the address it holds (read when the task runs).
std::uint64_t param_bits(const aclrtRandomParaInfo& p) {
  std::uint64_t bits = 0;
  if (p.isAddr != 0) {
    const void* at = nullptr;
    std::memcpy(&at, p.valueOrAddr, sizeof at);
    if (at == nullptr) throw_rule(errc::null_parameter, "aclrtRandomNumAsync", "a parameter's address is null");
    std::memcpy(&bits, at, p.size <= 8 ? p.size : 8);
  } else {
    std::memcpy(&bits, p.valueOrAddr, p.size <= 8 ? p.size : 8);
  }
  return bits;
}

// A parameter of the task's data type, as a double (floating point) or as a 64-bit integer.
double param_real(const aclrtRandomParaInfo& p, int type) {
  const std::uint64_t bits = param_bits(p);
  switch (type) {
    case ACL_FLOAT16: return keel::ops::half_bits_to_float(static_cast<std::uint16_t>(bits));
    case ACL_BF16: return keel::ops::bfloat16_bits_to_float(static_cast<std::uint16_t>(bits));
    default: {  // ACL_FLOAT
      float f = 0;
      const auto low = static_cast<std::uint32_t>(bits);
      std::memcpy(&f, &low, sizeof f);
      return f;
    }
  }
}
std::int64_t param_signed(const aclrtRandomParaInfo& p, int type) {
  const std::uint64_t bits = param_bits(p);
  return type == ACL_INT32 ? static_cast<std::int32_t>(static_cast<std::uint32_t>(bits))
                           : static_cast<std::int64_t>(bits);
}

std::size_t element_size(int type) {
  switch (type) {
    case ACL_FLOAT16:
    case ACL_BF16: return 2;
    case ACL_FLOAT:
    case ACL_INT32:
    case ACL_UINT32: return 4;
    case ACL_INT64:
    case ACL_UINT64: return 8;
    default: return 0;
  }
}
bool floating(int type) { return type == ACL_FLOAT || type == ACL_FLOAT16 || type == ACL_BF16; }

void store_real(void* out, std::uint64_t i, double v, int type) {
  auto* at = static_cast<unsigned char*>(out);
  if (type == ACL_FLOAT) {
    const float f = static_cast<float>(v);
    std::memcpy(at + i * 4, &f, 4);
  } else {
    const std::uint16_t h = type == ACL_FLOAT16 ? keel::ops::float_to_half_bits(static_cast<float>(v))
                                                : keel::ops::float_to_bfloat16_bits(static_cast<float>(v));
    std::memcpy(at + i * 2, &h, 2);
  }
}
void store_integer(void* out, std::uint64_t i, std::uint64_t v, int type) {
  auto* at = static_cast<unsigned char*>(out);
  if (element_size(type) == 4) {
    const auto w = static_cast<std::uint32_t>(v);
    std::memcpy(at + i * 4, &w, 4);
  } else {
    std::memcpy(at + i * 8, &v, 8);
  }
}

double standard_normal(philox& g, bool truncated) {
  for (;;) {
    const double u1 = 1.0 - g.unit(), u2 = g.unit();  // u1 in (0, 1]
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    if (!truncated || std::fabs(z) <= 2.0) return z;
  }
}

void generate(const aclrtRandomNumTaskInfo& task, int type, int kind) {
  std::uint64_t offset = 0;
  std::memcpy(&offset, task.randomCounterAddr, sizeof offset);
  philox g(param_bits(task.randomSeed), offset);
  const std::uint64_t n = param_bits(task.randomNum);
  const auto& info = task.randomNumFuncParaInfo.paramInfo;
  void* out = task.randomResultAddr;
  switch (kind) {
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK: {
      const double ratio = param_real(info.dropoutBitmaskInfo.dropoutRation, type);
      auto* bytes = static_cast<unsigned char*>(out);
      for (std::uint64_t i = 0; i < n; i += 8) {
        unsigned char byte = 0;
        for (unsigned bit = 0; bit < 8 && i + bit < n; ++bit)
          if (g.unit() >= ratio) byte = static_cast<unsigned char>(byte | (1u << bit));
        bytes[i / 8] = byte;
      }
      break;
    }
    case ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS:
      if (floating(type)) {
        const double lo = param_real(info.uniformDisInfo.min, type), hi = param_real(info.uniformDisInfo.max, type);
        for (std::uint64_t i = 0; i < n; ++i) store_real(out, i, lo + (hi - lo) * g.unit(), type);
      } else {
        const std::int64_t lo = param_signed(info.uniformDisInfo.min, type);
        const std::int64_t hi = param_signed(info.uniformDisInfo.max, type);
        const bool is_signed = type == ACL_INT32 || type == ACL_INT64;
        if (is_signed ? hi <= lo : static_cast<std::uint64_t>(hi) <= static_cast<std::uint64_t>(lo))
          throw_rule(errc::invalid_parameter, "aclrtRandomNumAsync", "max must be greater than min");
        const std::uint64_t span = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
        for (std::uint64_t i = 0; i < n; ++i) {
          const std::uint64_t draw = (static_cast<std::uint64_t>(g.next()) << 32) | g.next();
          store_integer(out, i, static_cast<std::uint64_t>(lo) + draw % span, type);
        }
      }
      break;
    default: {  // normal, truncated or not
      const double mean = param_real(info.normalDisInfo.mean, type), sd = param_real(info.normalDisInfo.stddev, type);
      const bool truncated = kind == ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS;
      for (std::uint64_t i = 0; i < n; ++i) store_real(out, i, mean + sd * standard_normal(g, truncated), type);
      break;
    }
  }
  offset += g.blocks_used();
  std::memcpy(task.randomCounterAddr, &offset, sizeof offset);
}

}  // namespace
}  // namespace keel::acl_emulation::detail

using namespace keel::acl_emulation::detail;

extern "C" {

aclError aclrtRandomNumAsync(const aclrtRandomNumTaskInfo* taskInfo, const aclrtStream stream, void* reserve) {
  static constexpr const char* api = "aclrtRandomNumAsync";
  return guarded(api, call::other, [&] {
    require(taskInfo, api, "taskInfo");
    if (reserve != nullptr) throw_status(ACL_ERROR_INVALID_PARAM, "reserve must be NULL");
    if (taskInfo->randomResultAddr == nullptr || taskInfo->randomCounterAddr == nullptr)
      throw_status(ACL_ERROR_INVALID_PARAM, "randomResultAddr and randomCounterAddr are required");
    const int type = raw(taskInfo->dataType);
    const int kind = raw(taskInfo->randomNumFuncParaInfo.funcType);
    if (element_size(type) == 0)
      throw_status(ACL_ERROR_INVALID_PARAM, "data type " + std::to_string(type) +
                                                " is not one of INT32, INT64, UINT32, UINT64, BF16, FLOAT16, FLOAT");
    if (kind < ACL_RT_RANDOM_NUM_FUNC_TYPE_DROPOUT_BITMASK || kind > ACL_RT_RANDOM_NUM_FUNC_TYPE_TRUNCATED_NORMAL_DIS)
      throw_status(ACL_ERROR_INVALID_PARAM, "unknown aclrtRandomNumFuncType " + std::to_string(kind));
    if (kind != ACL_RT_RANDOM_NUM_FUNC_TYPE_UNIFORM_DIS && !floating(type))
      throw_status(ACL_ERROR_INVALID_PARAM, "normal numbers and dropout ratios are of a floating-point type");
    hb::stream_handle s = current_device_stream(stream, api);
    cann_rules::check_issue(stream);
    const aclrtRandomNumTaskInfo task = *taskInfo;  // the parameters as given now; addresses read when it runs
    hb::launch_host(s, [task, type, kind] { generate(task, type, kind); });
    cann_rules::note_task(stream);
  });
}

}  // extern "C"
