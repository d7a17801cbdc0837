// Locates the CANN runtime at run time. Operator marshalling is not implemented yet (issue 8), so
// even with CANN present the backend reports itself unavailable with that reason.
#include "device/ascend/ascend_backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace opgate {
namespace {

// Where a CANN installation keeps its runtime libraries (ascend-abi.md: ASCEND_HOME_PATH, then
// ASCEND_TOOLKIT_HOME, then the loader's own search path).
std::vector<std::string> candidate_paths(const char* lib) {
  std::vector<std::string> out;
  for (const char* var : {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"}) {
    if (const char* root = std::getenv(var); root != nullptr && *root != '\0') {
      out.push_back(fmt::format("{}/lib64/{}", root, lib));
    }
  }
  out.push_back(lib);
  return out;
}

}  // namespace

Expected<std::unique_ptr<Backend>> make_ascend_backend() {
  std::string tried;
  for (const char* lib : {"libascendcl.so", "libacl_rt.so"}) {
    for (const auto& path : candidate_paths(lib)) {
      if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        dlclose(h);
        return Status(StatusCode::kUnsupported,
                      fmt::format("ascend backend unavailable: found {} but operator marshalling is not "
                                  "implemented in this build",
                                  path));
      }
      tried += (tried.empty() ? "" : ", ") + path;
    }
  }
  return Status(StatusCode::kUnsupported,
                fmt::format("ascend backend unavailable: no CANN runtime found (tried {}); install CANN and "
                            "set ASCEND_HOME_PATH (e.g. source set_env.sh), or use --backend emu",
                            tried));
}

}  // namespace opgate
