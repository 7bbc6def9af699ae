// SPDX-License-Identifier: Apache-2.0
// A picture of a model: captures the concurrent-update model of
// capture_update.cpp (out = tmp + alpha * other in a task group, gated by an
// external fence an update stream signals, a side stream forked off for a
// second add and joined back, the result copied to the host), then writes
// keel::to_dot and keel::to_json of it and, when Graphviz's `dot` is on the
// PATH, renders the DOT to a PNG. Prints where the files are.
//
//   model_picture [output directory]   (default: <temp>/keel_model_picture)
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "keel/runtime.hpp"
#include "keel/runtime/model_dump.hpp"

namespace {

void add_kernel(keel::host::launch_context&, keel::memory_span out, keel::memory_span tmp, keel::memory_span other,
                float alpha) {
  auto* o = static_cast<float*>(out.data);
  const auto* t = static_cast<const float*>(tmp.data);
  const auto* x = static_cast<const float*>(other.data);
  for (std::size_t i = 0; i < out.bytes / sizeof(float); ++i) o[i] = t[i] + alpha * x[i];
}
constexpr keel::kernel_kind add{"add"};

bool write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  return static_cast<bool>(f);
}

}  // namespace

int main(int argc, char** argv) try {
  const std::filesystem::path dir =
      argc > 1 ? std::filesystem::path(argv[1]) : std::filesystem::temp_directory_path() / "keel_model_picture";
  std::filesystem::create_directories(dir);

  auto& dev = keel::host::default_device();
  constexpr std::size_t n = 8, bytes = n * sizeof(float);
  keel::host::stream main_stream{dev}, side{dev}, update_stream{dev};
  keel::host::event fence{dev, keel::event_flags::external}, fork{dev}, join{dev};
  keel::host::device_buffer tmp{main_stream, bytes}, other{main_stream, bytes}, out{main_stream, bytes},
      out2{main_stream, bytes};
  keel::host::pinned_buffer out_host{main_stream, bytes};
  std::vector<float> ones(n, 1.0f);
  main_stream.copy_async(tmp.span(), keel::host_span(ones.data(), bytes));
  main_stream.copy_async(other.span(), keel::host_span(ones.data(), bytes));
  main_stream.synchronize();

  keel::host::model model;
  keel::host::task_group alpha_group;
  {
    keel::host::capture_scope capture{main_stream};
    main_stream.wait(fence);   // each execution waits for the update stream's signal
    main_stream.reset_event(fence);  // and consumes it
    {
      keel::host::task_group_scope mark{main_stream};
      main_stream.launch(add, &add_kernel, out.span(), tmp.span(), other.span(), 1.1f);
      alpha_group = mark.end();
    }
    fork.record(main_stream);
    side.wait(fork);  // the side stream joins the capture
    side.launch(add, &add_kernel, out2.span(), out.span(), other.span(), 2.0f);
    join.record(side);
    main_stream.wait(join);
    main_stream.copy_async(out_host.span(), out2.span());
    model = capture.end();
  }
  model.set_name("concurrent update");

  // One step: update alpha on the update stream, signal the fence, execute.
  {
    keel::host::update_scope update{update_stream, alpha_group};
    update_stream.launch(add, &add_kernel, out.span(), tmp.span(), other.span(), 5.5f);
    update.end();
  }
  fence.record(update_stream);
  model.execute(main_stream);
  main_stream.synchronize();
  std::printf("out[0] = %.1f (1 + 5.5, then + 2)\n", static_cast<double>(out_host.data_as<float>()[0]));

  const auto tasks = model.tasks();
  std::printf("model #%llu '%s': %zu streams, %zu tasks\n", static_cast<unsigned long long>(model.id()),
              model.name().c_str(), model.streams().size(), tasks.size());
  const auto dot_path = dir / "model.dot", json_path = dir / "model.json", png_path = dir / "model.png";
  if (!write(dot_path, keel::to_dot(model)) || !write(json_path, keel::to_json(model))) {
    std::fprintf(stderr, "cannot write to %s\n", dir.string().c_str());
    return 1;
  }
  std::printf("DOT:  %s\nJSON: %s\n", dot_path.string().c_str(), json_path.string().c_str());
  if (std::system("command -v dot > /dev/null 2>&1") == 0) {
    const std::string render = "dot -Tpng -o '" + png_path.string() + "' '" + dot_path.string() + "'";
    if (std::system(render.c_str()) != 0) {
      std::fprintf(stderr, "dot failed: %s\n", render.c_str());
      return 1;
    }
    std::printf("PNG:  %s\n", png_path.string().c_str());
  } else {
    std::printf("PNG:  not rendered (install graphviz for `dot`)\n");
  }
  return 0;
} catch (const keel::error& e) {
  std::fprintf(stderr, "keel error: %s\n", e.what());
  return 1;
}
