// SPDX-License-Identifier: Apache-2.0
// out = tmp + alpha * other, captured once into a model and executed twice;
// between the executions a task-group update changes alpha from 1.1 to 5.5.
// Prints 2.2 for every element, then 6.6. (The vendor's sample: ~200 lines of
// C with manual frees and no checks.)
//
//   capture_update [host]             keel's host backend (the default)
//   capture_update acl [directory]    the ACL backend: CANN's libascendcl.so from
//                                     <directory>, or ASCEND_HOME_PATH/lib64, or
//                                     LD_LIBRARY_PATH (keel's emulation works too:
//                                     ASCEND_HOME_PATH=<build>/emulation/acl)
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "keel/runtime.hpp"
#if defined(KEEL_EXAMPLE_WITH_ACL)
#include "keel/acl/backend.hpp"
#include "keel/acl/ops.hpp"
#endif

namespace {

// A kernel: arguments arrive by value, as the launch stored them.
void add_kernel(keel::host::launch_context& ctx, keel::memory_span out, keel::memory_span tmp,
                keel::memory_span other, float alpha) {
  auto* o = static_cast<float*>(out.data);
  auto* t = static_cast<const float*>(tmp.data);
  auto* x = static_cast<const float*>(other.data);
  ctx.parallel_for(out.bytes / sizeof(float), 1024, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) o[i] = t[i] + alpha * x[i];
  });
}
constexpr keel::kernel_kind add{"add"};

void print(const char* label, const std::vector<float>& v) {
  std::printf("%s:", label);
  for (float f : v) std::printf(" %.1f", static_cast<double>(f));
  std::printf("\n");
}

// The program, once for every backend; launch_add(stream, out, tmp, other,
// alpha) issues the add the way the backend runs kernels.
template <class B, class LaunchAdd>
void capture_update(typename B::device_type& dev, LaunchAdd launch_add) {
  using stream = keel::basic_stream<B>;
  constexpr std::size_t n = 8, bytes = n * sizeof(float);
  stream main_stream{dev}, update_stream{dev};
  std::vector<float> tmp_host(n, 1.1f), other_host(n, 1.0f);

  keel::basic_device_buffer<B> tmp{main_stream, bytes}, other{main_stream, bytes}, out{main_stream, bytes};
  keel::basic_pinned_buffer<B> out_host{main_stream, bytes};
  main_stream.copy_async(tmp.span(), keel::host_span(tmp_host.data(), bytes));
  main_stream.copy_async(other.span(), keel::host_span(other_host.data(), bytes));
  main_stream.synchronize();

  keel::basic_model<B> model;
  keel::basic_task_group<B> alpha_group;
  {
    keel::basic_capture_scope<B> capture{main_stream};
    keel::basic_task_group_scope<B> mark{main_stream};
    launch_add(main_stream, out.span(), tmp.span(), other.span(), 1.1f);
    alpha_group = mark.end();
    main_stream.copy_async(out_host.span(), out.span());
    model = capture.end();  // leaving before this line discards the capture (and reports it)
  }
  const auto result = [&] {
    const float* p = out_host.template data_as<float>();
    return std::vector<float>(p, p + n);
  };

  model.execute(main_stream);
  main_stream.synchronize();
  print("alpha 1.1", result());

  {
    keel::basic_update_scope<B> update{update_stream, alpha_group};  // checked: count and kind must match
    launch_add(update_stream, out.span(), tmp.span(), other.span(), 5.5f);
    update.end();
  }
  update_stream.synchronize();
  model.execute(main_stream);
  main_stream.synchronize();
  print("alpha 5.5", result());
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string backend = argc > 1 ? argv[1] : "host";
  if (backend == "host") {
    capture_update<keel::host::backend>(
        keel::host::default_device(),
        [](keel::host::stream_ref s, keel::memory_span out, keel::memory_span tmp, keel::memory_span other,
           float alpha) { s.launch(add, &add_kernel, out, tmp, other, alpha); });
    return 0;
  }
#if defined(KEEL_EXAMPLE_WITH_ACL)
  if (backend == "acl") {
    keel::acl::device dev{keel::acl::device_options{0, argc > 2 ? argv[2] : ""}};
    // On ACL the add is aclnnAdd: phase one here, phase two launched on the stream.
    const auto view = [](const keel::memory_span& s) {
      return keel::ops::tensor(s.data, keel::ops::dtype::float32, {static_cast<std::int64_t>(s.bytes / sizeof(float))});
    };
    capture_update<keel::acl::backend>(
        dev, [&](keel::acl::stream_ref s, keel::memory_span out, keel::memory_span tmp, keel::memory_span other,
                 float alpha) {
          keel::acl::run_on(s, keel::acl::prepare_add(dev, view(tmp), view(other), keel::ops::scalar(alpha), view(out)));
        });
    return 0;
  }
#endif
  std::fprintf(stderr, "usage: %s [host | acl [library directory]]%s\n", argv[0],
#if defined(KEEL_EXAMPLE_WITH_ACL)
               "");
#else
               " (this build has no ACL backend: keel::plugin was not found)");
#endif
  return 2;
} catch (const keel::error& e) {
  std::fprintf(stderr, "keel error: %s\n", e.what());
  return 1;
}
