// Replay driver linked into the fuzz targets when no fuzzing engine is available (gcc builds;
// qpdf's standalone runner): each file argument, and each regular file inside a directory argument
// (sorted), goes once through LLVMFuzzerTestOneInput. Arguments starting with '-' (libFuzzer
// flags) are ignored and missing paths are skipped, so ctest uses one command line for both.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

bool replay(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "standalone fuzz driver: cannot read %s\n", path.c_str());
    return false;
  }
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "Running: %s (%zu bytes)\n", path.c_str(), bytes.size());
  // A heap copy of exactly `size` bytes, so reading past the input is an error under sanitizers.
  std::unique_ptr<uint8_t[]> exact(new uint8_t[bytes.size()]);
  std::copy(bytes.begin(), bytes.end(), exact.get());
  LLVMFuzzerTestOneInput(exact.get(), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  size_t runs = 0;
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.empty() && arg[0] == '-') continue;
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& entry : std::filesystem::directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        ok = replay(f) && ok;
        ++runs;
      }
    } else if (std::filesystem::is_regular_file(arg, ec)) {
      ok = replay(arg) && ok;
      ++runs;
    } else {
      std::fprintf(stderr, "standalone fuzz driver: %s does not exist; skipped\n", arg.c_str());
    }
  }
  std::fprintf(stderr, "standalone fuzz driver: %zu input(s) replayed without a finding\n", runs);
  return ok ? 0 : 1;
}
