// SPDX-License-Identifier: Apache-2.0
// Fuzz target: pool calls (allocate on one of three streams, release on the
// allocation's stream or a wrong one, a span that outlives its release,
// trim_to, a capture with the pool, a model destroyed, the pool destroyed
// while held) against a reference model of the bytes reserved and used.
//
// The reference: used = the size classes of what is handed out (owners,
// spans, models); reserved = used + idle, and idle only ever grows by
// releases and shrinks by trim_to / the pool's end; trim_to(k) below used is
// refused and changes nothing; a trim_to(k) leaves at most max(k, used) reserved.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fuzz_input.hpp"
#include "keel/host/host.hpp"
#include "keel/host/memory_pool.hpp"

namespace {

keel::host::device& fuzz_device() {
  static keel::host::device dev{keel::host::device_options{1, 64, 8, 64u << 20}};
  return dev;
}

constexpr keel::kernel_kind touch_kind{"touch"};
void touch(keel::host::launch_context&, keel::memory_span m) { static_cast<unsigned char*>(m.data)[0] = 1; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  keel_fuzz::input in(data, size);
  keel::host::device& dev = fuzz_device();
  keel::host::stream streams[3] = {keel::host::stream{dev}, keel::host::stream{dev}, keel::host::stream{dev}};
  auto pool = std::make_unique<keel::host::memory_pool>(dev, keel::pool_options("fuzz"));
  keel::host::memory_pool_ref view = pool->ref();
  struct live {
    keel::host::pool_buffer buffer;
    int stream;
  };
  std::vector<live> owned;
  std::vector<keel::memory_span> spans;
  std::vector<keel::host::model> models;
  std::size_t ref_used = 0;  // bytes the owners hold, by size class (spans and models hold more)

  auto check = [&](const char* after) {
    const keel::pool_statistics st = view.statistics();
    if (spans.empty() && models.empty())
      KEEL_FUZZ_REQUIRE(st.used == ref_used, "after %s: used %zu, reference %zu", after, st.used, ref_used);
    else
      KEEL_FUZZ_REQUIRE(st.used >= ref_used, "after %s: used %zu below the owners' %zu", after, st.used, ref_used);
    KEEL_FUZZ_REQUIRE(st.reserved >= st.used, "after %s: reserved %zu < used %zu", after, st.reserved, st.used);
    KEEL_FUZZ_REQUIRE(st.used_high >= st.used && st.reserved_high >= st.reserved, "after %s: high-water below current",
                      after);
    KEEL_FUZZ_REQUIRE(st.hits + st.backend_allocations == st.allocations, "after %s: hits + new != allocations", after);
  };

  for (int step = 0; step < 64 && !in.empty(); ++step) {
    const int s = static_cast<int>(in.below(3));
    switch (in.below(8)) {
      case 0:
      case 1: {  // allocate
        const std::size_t bytes = 1 + (std::size_t{in.byte()} << in.below(12));
        owned.push_back({view.allocate(streams[s], bytes), s});
        ref_used += keel::pool_size_class(bytes);
        check("allocate");
        break;
      }
      case 2: {  // release on its stream, or refused on a wrong one
        if (owned.empty()) break;
        const std::size_t i = in.below(static_cast<unsigned>(owned.size()));
        live& l = owned[i];
        if (s != l.stream) {
          bool refused = false;
          try {
            l.buffer.release(streams[s]);
          } catch (const keel::error&) {
            refused = true;
          }
          KEEL_FUZZ_REQUIRE(refused && l.buffer, "a release on the wrong stream was not refused");
          break;
        }
        const std::size_t cls = l.buffer.capacity();
        l.buffer.release(streams[s]);
        ref_used -= cls;
        owned.erase(owned.begin() + static_cast<std::ptrdiff_t>(i));
        check("release");
        break;
      }
      case 3: {  // a kernel takes a span, then the owner goes: the span keeps it until dropped
        if (owned.empty()) break;
        const std::size_t i = in.below(static_cast<unsigned>(owned.size()));
        keel::memory_span m = owned[i].buffer.span();
        streams[owned[i].stream].launch(touch_kind, &touch, m);
        spans.push_back(m);
        ref_used -= owned[i].buffer.capacity();
        owned.erase(owned.begin() + static_cast<std::ptrdiff_t>(i));  // released: still used through the spans
        check("release with a span");
        break;
      }
      case 4: {  // drop a span
        if (spans.empty()) break;
        const std::size_t i = in.below(static_cast<unsigned>(spans.size()));
        spans.erase(spans.begin() + static_cast<std::ptrdiff_t>(i));
        for (auto& st : streams) st.synchronize();  // the kernels' copies of the span are gone too
        check("a span dropped");
        break;
      }
      case 5: {  // trim_to
        const keel::pool_statistics before = view.statistics();
        const std::size_t keep = std::size_t{in.byte()} << in.below(16);
        bool refused = false;
        try {
          view.trim_to(keep);
        } catch (const keel::error&) {
          refused = true;
        }
        const keel::pool_statistics after = view.statistics();
        KEEL_FUZZ_REQUIRE(refused == (keep < before.used), "trim_to(%zu) with %zu used: refused %d", keep, before.used,
                          refused);
        if (refused) KEEL_FUZZ_REQUIRE(after.reserved == before.reserved, "a refused trim changed the pool");
        else
          KEEL_FUZZ_REQUIRE(after.reserved <= (keep > after.used ? keep : after.used), "trim_to(%zu) left %zu reserved",
                            keep, after.reserved);
        break;
      }
      case 6: {  // capture with the pool: what it allocates belongs to the model
        keel::host::model m;
        {
          keel::host::capture_scope capture{streams[s], view};
          const int n = 1 + static_cast<int>(in.below(3));
          for (int k = 0; k < n; ++k) {
            auto tmp = view.allocate(streams[s], 1 + std::size_t{in.byte()} * 64);
            streams[s].launch(touch_kind, &touch, tmp.span());
          }
          if (in.chance(64)) break;  // discarded: everything goes back
          m = capture.end();
        }
        if (m) {
          try {
            m.execute(streams[s]);
          } catch (const keel::error& e) {
            // Models sharing the pool's memory never run concurrently: the
            // pool refuses an execution while another stream's has not finished.
            KEEL_FUZZ_REQUIRE(e.code() == keel::errc::invalid_state, "execute: %s", e.what());
          }
          models.push_back(std::move(m));
        }
        check("a capture");
        break;
      }
      case 7: {  // a model goes
        if (models.empty()) break;
        models.erase(models.begin() + static_cast<std::ptrdiff_t>(in.below(static_cast<unsigned>(models.size()))));
        for (auto& st : streams) st.synchronize();
        check("a model destroyed");
        break;
      }
    }
    // Spans and models hold memory the reference cannot attribute by itself:
    // with none of them alive, used is exactly what the owners hold.
    if (spans.empty() && models.empty()) {
      for (auto& st : streams) st.synchronize();
      std::size_t owners = 0;
      for (const live& l : owned) owners += l.buffer.capacity();
      KEEL_FUZZ_REQUIRE(owners == ref_used && view.statistics().used == owners, "used %zu, owners hold %zu (reference %zu)",
                        view.statistics().used, owners, ref_used);
    }
  }
  // The end: models and spans go, then the owners; the pool holds nothing in use.
  models.clear();
  spans.clear();
  for (auto& st : streams) st.synchronize();
  owned.clear();
  KEEL_FUZZ_REQUIRE(view.statistics().used == 0, "used %zu at the end", view.statistics().used);
  if (in.chance(128)) {
    auto late = view.allocate(streams[0], 4096);
    pool.reset();  // deferred: the allocation holds it
    static_cast<unsigned char*>(late.data())[0] = 2;
  }
  for (auto& st : streams) st.synchronize();
  return 0;
}
