// libFuzzer target for the golden-folder readers behind `opgate golden verify` and `opgate run
// --against golden` (issue 13): the input is case.json, a NUL byte, then manifest.json, written into
// a folder golden/<stem>/<id>/; read_golden and verify_golden must return an error naming a file of
// the folder (or, for verify, a cause), never crash, whatever the two files hold.
// Optionally the manifest is followed by "\0NPY\0" and the bytes of one .npy file, written to every
// tensor path the manifest lists (inputs/, expected/, format 2's .mag/.slack.npy); a manifest
// digest "auto" is replaced by the file's real SHA-256, so mutations get past the digest check to
// the decoding, dtype and shape checks of the tensor files.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/case.h"
#include "harness/golden.h"
#include "harness/golden_folder.h"
#include "fuzz/op_target.h"

namespace {

constexpr const char* kTarget = "fuzz_golden_folder";
// The folder name the seed's case.json and manifest.json agree with, so mutations reach past the
// folder checks.
constexpr const char* kStem = "moe_finalize_routing_v2_grad";
constexpr const char* kId = "mfrg.copy_no_scales.f32.001";

// The scratch root, removed when the process exits normally.
struct ScratchRoot {
  std::string path;
  ~ScratchRoot() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};
ScratchRoot scratch;

std::string make_folder() {
  char root[] = "/tmp/opgate_fuzz_golden.XXXXXX";
  if (mkdtemp(root) == nullptr) std::abort();
  scratch.path = root;
  const std::string dir = fmt::format("{}/{}/{}", root, kStem, kId);
  mkdir(fmt::format("{}/{}", root, kStem).c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  // A case may need at most this much here: the fuzzer runs under ASan with a 2 GB RSS limit.
  opgate::set_max_case_bytes(uint64_t{64} << 20);
  return dir;
}

void write(const std::string& path, const char* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
}

// Writes `npy` to every tensor path the manifest lists and fills in "auto" digests; the manifest
// text is returned unchanged when it does not parse (the readers must then refuse it themselves).
std::string write_tensor_files(const std::string& dir, const std::string& manifest_text, const std::string& npy) {
  auto m = nlohmann::json::parse(manifest_text, nullptr, false);
  if (m.is_discarded() || !m.is_object() || !m.contains("tensors") || !m["tensors"].is_object()) return manifest_text;
  const std::string digest = opgate::golden_folder::sha256_hex(npy);
  for (auto it = m["tensors"].begin(); it != m["tensors"].end(); ++it) {
    const std::string rel = it.key();
    const bool plain = (rel.rfind("inputs/", 0) == 0 || rel.rfind("expected/", 0) == 0) &&
                       rel.find("..") == std::string::npos && rel.find('/', rel.find('/') + 1) == std::string::npos &&
                       rel.find('\0') == std::string::npos;
    if (!plain) continue;  // never outside the folder
    mkdir((dir + "/" + rel.substr(0, rel.find('/'))).c_str(), 0755);
    write(dir + "/" + rel, npy.data(), npy.size());
    if (it.value().is_object() && it.value().value("sha256", nlohmann::json()) == "auto") it.value()["sha256"] = digest;
  }
  return m.dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using opgate::fuzz::report_finding;
  static const std::string dir = make_folder();
  const char* text = reinterpret_cast<const char*>(data);
  size_t split = 0;
  while (split < size && text[split] != '\0') ++split;
  write(dir + "/case.json", text, split);
  std::string manifest(text + std::min(split + 1, size), size - std::min(split + 1, size));
  std::filesystem::remove_all(dir + "/inputs");
  std::filesystem::remove_all(dir + "/expected");
  static const std::string kNpyMark("\0NPY\0", 5);
  if (const size_t at = manifest.find(kNpyMark); at != std::string::npos) {
    const std::string npy = manifest.substr(at + kNpyMark.size());
    manifest = write_tensor_files(dir, manifest.substr(0, at), npy);
  }
  write(dir + "/manifest.json", manifest.data(), manifest.size());

  auto golden = opgate::read_golden(dir);
  if (!golden && golden.status().message().rfind(dir, 0) != 0) {
    report_finding(kTarget, "error-without-file", "read_golden's error does not start with the folder: " +
                                                      golden.status().message());
  }
  opgate::Case current;
  current.id = kId;
  current.op = kStem;
  const opgate::GoldenCheck check = opgate::verify_golden(dir, {current});
  if (!check.ok && (check.cause.empty() || check.details.empty())) {
    report_finding(kTarget, "mismatch-without-cause", "verify_golden fails without naming a cause");
  }
  return 0;
}
