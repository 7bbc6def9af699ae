// SPDX-License-Identifier: Apache-2.0
// The main of a fuzz target built without libFuzzer (GCC, or Clang without
// the fuzzer runtime): runs LLVMFuzzerTestOneInput on every file named on the
// command line, or in the directories named there, so the committed corpus
// is a regression test in every build.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {
int run_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", p.string().c_str());
    return 1;
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::size_t files = 0;
  int failures = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::directory_iterator(arg))
        if (e.is_regular_file()) failures += run_file(e.path()), ++files;
    } else {
      failures += run_file(arg), ++files;
    }
  }
  std::printf("replayed %zu inputs\n", files);
  return failures == 0 && files > 0 ? 0 : 1;
}
