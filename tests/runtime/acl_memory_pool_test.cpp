// SPDX-License-Identifier: Apache-2.0
// The emulation's stream-ordered memory allocation through the C API, as a
// CANN client calls it (keel's function table over libascendcl.so): pools,
// attributes, stream-ordered reuse, trimming, deferred destruction, statuses.
#include <cstdint>

#include "keel/acl/memory_pool.hpp"
#include "test_support.hpp"

namespace {
keel::acl::mem_pool_props device_pool(std::size_t max_size) {
  keel::acl::mem_pool_props props;
  props.max_size = max_size;
  return props;
}
std::uint64_t attr_bytes(const keel::acl::api& api, keel::acl::mem_pool_handle pool, keel::acl::mem_pool_attr a) {
  std::uint64_t v = 0;
  REQUIRE(api.aclrtMemPoolGetAttr(pool, a, &v) == 0);
  return v;
}
}  // namespace

TEST_CASE("acl emulation: aclrtMemPool allocates in stream order, reuses, trims and reports its figures",
          "[runtime][acl][memory_pool]") {
  const keel::acl::api& api = acl::device().functions();
  using attr = keel::acl::mem_pool_attr;
  keel::acl::stream_handle s = nullptr;
  REQUIRE(api.aclrtCreateStream(&s) == 0);
  keel::acl::mem_pool_handle pool = nullptr;
  const keel::acl::mem_pool_props props = device_pool(1 << 20);
  REQUIRE(api.aclrtMemPoolCreate(&pool, &props) == 0);

  void* a = nullptr;
  REQUIRE(api.aclrtMemPoolMallocAsync(&a, 4096, pool, s) == 0);
  CHECK(attr_bytes(api, pool, attr::used_mem_current) == 4096);
  CHECK(attr_bytes(api, pool, attr::reserved_mem_current) == 4096);
  REQUIRE(api.aclrtMemPoolFreeAsync(a, s) == 0);
  CHECK(attr_bytes(api, pool, attr::used_mem_current) == 0);
  void* b = nullptr;
  REQUIRE(api.aclrtMemPoolMallocAsync(&b, 4000, pool, s) == 0);
  CHECK(b == a);  // the same stream reuses what it released
  CHECK(attr_bytes(api, pool, attr::used_mem_high) == 4096);
  REQUIRE(api.aclrtMemPoolFreeAsync(b, s) == 0);
  REQUIRE(api.aclrtSynchronizeStream(s) == 0);

  int flag = 0;
  REQUIRE(api.aclrtMemPoolSetAttr(pool, attr::reuse_allow_opportunistic, &flag) == 0);
  flag = 1;
  REQUIRE(api.aclrtMemPoolGetAttr(pool, attr::reuse_allow_opportunistic, &flag) == 0);
  CHECK(flag == 0);
  std::uint64_t zero = 0;
  REQUIRE(api.aclrtMemPoolSetAttr(pool, attr::used_mem_high, &zero) == 0);  // restarts the mark
  CHECK(attr_bytes(api, pool, attr::used_mem_high) == 0);
  CHECK(api.aclrtMemPoolSetAttr(pool, attr::used_mem_current, &zero) == 100000);  // read-only

  REQUIRE(api.aclrtMemPoolTrimTo(pool, 0) == 0);
  CHECK(attr_bytes(api, pool, attr::reserved_mem_current) == 0);

  void* big = nullptr;
  CHECK(api.aclrtMemPoolMallocAsync(&big, 2 << 20, pool, s) == 207001);  // beyond maxSize: ACL_ERROR_RT_MEMORY_ALLOCATION
  CHECK(attr_bytes(api, pool, attr::reserved_mem_current) == 0);

  // Destroyed with an allocation outstanding: the pool goes when it is freed.
  void* held = nullptr;
  REQUIRE(api.aclrtMemPoolMallocAsync(&held, 512, pool, s) == 0);
  REQUIRE(api.aclrtMemPoolDestroy(pool) == 0);
  CHECK(api.aclrtMemPoolGetAttr(pool, attr::used_mem_current, &zero) == 100000);  // no longer a pool
  static_cast<unsigned char*>(held)[0] = 7;
  CHECK(api.aclrtMemPoolFreeAsync(held, s) == 0);
  CHECK(api.aclrtMemPoolFreeAsync(held, s) == 100000);  // freed already
  REQUIRE(api.aclrtSynchronizeStream(s) == 0);
  REQUIRE(api.aclrtDestroyStream(s) == 0);
}

TEST_CASE("acl emulation: aclrtMemPool calls refuse bad arguments with CANN's statuses",
          "[runtime][acl][memory_pool][misuse]") {
  const keel::acl::api& api = acl::device().functions();
  keel::acl::mem_pool_handle pool = nullptr;
  keel::acl::mem_pool_props props = device_pool(0);
  CHECK(api.aclrtMemPoolCreate(nullptr, &props) == 100000);
  CHECK(api.aclrtMemPoolCreate(&pool, nullptr) == 100000);
  props.location.type = 0;  // host memory: not a pool location
  CHECK(api.aclrtMemPoolCreate(&pool, &props) == 100000);
  props.location = {1, 1};  // no device 1
  CHECK(api.aclrtMemPoolCreate(&pool, &props) == 107001);  // ACL_ERROR_RT_INVALID_DEVICEID
  props = device_pool(0);
  REQUIRE(api.aclrtMemPoolCreate(&pool, &props) == 0);
  keel::acl::stream_handle s = nullptr;
  REQUIRE(api.aclrtCreateStream(&s) == 0);
  void* p = nullptr;
  CHECK(api.aclrtMemPoolMallocAsync(&p, 0, pool, s) == 100000);
  CHECK(api.aclrtMemPoolMallocAsync(nullptr, 64, pool, s) == 100000);
  CHECK(api.aclrtMemPoolMallocAsync(&p, 64, pool, nullptr) == 100000);
  CHECK(api.aclrtMemPoolMallocAsync(&p, 64, &props, s) == 100000);  // not a pool
  int local = 0;
  CHECK(api.aclrtMemPoolFreeAsync(&local, s) == 100000);  // not from a pool
  CHECK(api.aclrtMemPoolSetAttr(pool, static_cast<keel::acl::mem_pool_attr>(99), &local) == 100000);
  local = 2;
  CHECK(api.aclrtMemPoolSetAttr(pool, keel::acl::mem_pool_attr::reuse_allow_opportunistic, &local) == 100000);
  CHECK(api.aclrtMemPoolGetAttr(pool, keel::acl::mem_pool_attr::release_threshold, nullptr) == 100000);
  REQUIRE(api.aclrtDestroyStream(s) == 0);
  CHECK(api.aclrtMemPoolMallocAsync(&p, 64, pool, s) == 107017);  // a destroyed stream
  REQUIRE(api.aclrtMemPoolDestroy(pool) == 0);
  CHECK(api.aclrtMemPoolDestroy(pool) == 100000);
}

TEST_CASE("acl backend: a keel pool reserves from an aclrtMemPool of its own, which gets back what keel frees and trims",
          "[runtime][acl][memory_pool]") {
  const keel::acl::api& api = acl::device().functions();
  using attr = keel::acl::mem_pool_attr;
  keel::acl::stream s{acl::device()}, t{acl::device()};
  keel::acl::memory_pool pool{acl::device(), {"over aclrtMemPool"}};
  const keel::acl::mem_pool_handle native = pool.native_handle();
  REQUIRE(native != nullptr);
  CHECK(attr_bytes(api, native, attr::release_threshold) == 0);  // keel keeps the idle memory, not the runtime
  {
    auto a = pool.allocate(s, 4 * 1024);
    auto b = pool.allocate(t, 100 * 1024);
    // keel's reserved blocks are what the runtime's pool has handed out.
    CHECK(attr_bytes(api, native, attr::used_mem_current) == pool.statistics().reserved);
    CHECK(pool.statistics().backend_allocations == 2);
    a.template data_as<unsigned char>()[0] = 1;
  }
  auto again = pool.allocate(s, 4 * 1024);  // a keel hit: the runtime is not asked
  CHECK(pool.statistics().hits == 1);
  CHECK(attr_bytes(api, native, attr::used_mem_current) == pool.statistics().reserved);
  again.reset();
  // The reuse rules reach the runtime's pool as well.
  keel::pool_attributes rules = pool.attributes();
  rules.allow_opportunistic = false;
  pool.set_attributes(rules);
  int flag = 1;
  REQUIRE(api.aclrtMemPoolGetAttr(native, attr::reuse_allow_opportunistic, &flag) == 0);
  CHECK(flag == 0);
  s.synchronize();
  t.synchronize();
  pool.trim_to(0);  // keel frees its idle blocks to the runtime's pool, which returns them to the device
  CHECK(pool.statistics().reserved == 0);
  CHECK(attr_bytes(api, native, attr::used_mem_current) == 0);
  CHECK(attr_bytes(api, native, attr::reserved_mem_current) == 0);
  pool.reset();
  std::uint64_t v = 0;
  CHECK(api.aclrtMemPoolGetAttr(native, attr::used_mem_current, &v) == 100000);  // destroyed with keel's pool
}

TEST_CASE("acl backend: keel's own pool over aclrtMalloc where the runtime's pool is not used",
          "[runtime][acl][memory_pool]") {
  const keel::acl::api& api = acl::device().functions();
  using native_pool = keel::runtime_memory_pool<keel::acl::backend>;
  CHECK(native_pool::has_calls(api));
  keel::acl::api lacking = api;  // a runtime without one of the seven calls
  lacking.aclrtMemPoolTrimTo = decltype(lacking.aclrtMemPoolTrimTo)("aclrtMemPoolTrimTo");
  CHECK_FALSE(native_pool::has_calls(lacking));
  keel::acl::stream s{acl::device()};
  keel::pool_options own("keel's own");
  own.use_runtime_pool = false;
  keel::pool_options pinned("pinned");
  pinned.kind = keel::memory_kind::pinned_host;
  keel::acl::memory_pool a{acl::device(), own}, b{acl::device(), pinned};
  CHECK(a.native_handle() == nullptr);
  CHECK(b.native_handle() == nullptr);  // the runtime's pools hold device memory only
  {
    auto x = a.allocate(s, 4096);
    auto y = b.allocate(s, 4096);
    y.template data_as<unsigned char>()[0] = 3;
    CHECK(a.statistics().backend_allocations == 1);
  }
  CHECK(a.allocate(s, 4000).capacity() == 4096);
  s.synchronize();
}

TEST_CASE("acl backend: a runtime pool that is out of memory is keel's out_of_memory, the pool unchanged",
          "[runtime][acl][memory_pool][misuse]") {
  keel::acl::stream s{acl::device()};
  keel::acl::memory_pool pool{acl::device(), {"huge"}};
  REQUIRE(pool.native_handle() != nullptr);
  const keel::pool_statistics before = pool.statistics();
  // More than the emulated device has: the runtime's pool says 207001.
  KEEL_REQUIRE_ERROR(pool.allocate(s, std::size_t{1} << 50), keel::errc::out_of_memory, "'huge'");
  const keel::pool_statistics after = pool.statistics();
  CHECK(after.reserved == before.reserved);
  CHECK(after.allocations == before.allocations);
  CHECK(after.backend_allocations == before.backend_allocations);
  auto fine = pool.allocate(s, 512);
  CHECK(fine);
  s.synchronize();
}

TEST_CASE("acl backend: a registered pool is the stream's aclrtAllocator, unregistered when the registration goes",
          "[runtime][acl][memory_pool][allocator]") {
  const keel::acl::api& api = acl::device().functions();
  keel::acl::stream s{acl::device()};
  keel::acl::memory_pool pool{acl::device(), {"aclnn workspaces"}};
  keel::acl::stream_handle native = s.native_handle();
  keel::acl::allocator_desc_handle desc = nullptr;
  void* object = nullptr;
  keel::acl::allocator_alloc_func alloc = nullptr;
  keel::acl::allocator_free_func free = nullptr;
  keel::acl::allocator_alloc_advise_func advise = nullptr;
  keel::acl::allocator_get_addr_func address = nullptr;
  CHECK(api.aclrtAllocatorGetByStream(native, &desc, &object, &alloc, &free, &advise, &address) == 100000);
  {
    keel::acl::allocator_registration uses{s, pool};
    REQUIRE(api.aclrtAllocatorGetByStream(native, &desc, &object, &alloc, &free, &advise, &address) == 0);
    // What an aclnn operator does with the stream's allocator.
    void* block = alloc(object, 4096);
    REQUIRE(block != nullptr);
    CHECK(address(block) != nullptr);
    CHECK(pool.statistics().used == 4096);
    free(object, block);
    CHECK(pool.statistics().used == 0);
    CHECK(pool.statistics().allocations == 1);
  }
  CHECK(api.aclrtAllocatorGetByStream(native, &desc, &object, &alloc, &free, &advise, &address) == 100000);
  s.synchronize();
}

TEST_CASE("acl emulation: allocator descriptions and registrations refuse bad arguments",
          "[runtime][acl][allocator][misuse]") {
  const keel::acl::api& api = acl::device().functions();
  keel::acl::stream_handle s = nullptr;
  REQUIRE(api.aclrtCreateStream(&s) == 0);
  keel::acl::allocator_desc_handle d = api.aclrtAllocatorCreateDesc();
  REQUIRE(d != nullptr);
  CHECK(api.aclrtAllocatorRegister(s, d) == 100000);  // no object and functions yet
  CHECK(api.aclrtAllocatorSetObjToDesc(d, nullptr) == 100000);
  CHECK(api.aclrtAllocatorSetAllocFuncToDesc(nullptr, nullptr) == 100000);
  CHECK(api.aclrtAllocatorUnregister(s) == 100000);  // nothing registered
  CHECK(api.aclrtAllocatorRegister(nullptr, d) == 100000);
  REQUIRE(api.aclrtAllocatorDestroyDesc(d) == 0);
  CHECK(api.aclrtAllocatorDestroyDesc(d) == 100000);
  REQUIRE(api.aclrtDestroyStream(s) == 0);
}
