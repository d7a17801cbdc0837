// Library lookup and symbol resolution for the ascend backend (spec ascend-abi.md §2.1 order,
// §9 steps 1-3). Reasons name the library, the symbol and the variable to set.
#include "device/ascend/acl_loader.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace opgate::ascend {
namespace {

// §2.1 "Recommended resolution order" (libcust_opapi.so only when the user names it).
constexpr const char* kOpLibraries[] = {"libopapi_transformer.so", "libopapi.so",          "libopapi_math.so",
                                        "libopapi_nn.so",          "libopapi_legacy.so",   "libaclnn_ops_infer.so",
                                        "libaclnn_ops_train.so"};

std::string env_text(const char* var) {
  const char* v = std::getenv(var);
  return v == nullptr || *v == '\0' ? fmt::format("{} unset", var) : fmt::format("{}={}", var, v);
}

// The install roots the environment names, in lookup order, without duplicates.
std::vector<std::string> env_roots() {
  std::vector<std::string> roots;
  for (const char* var : {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"}) {
    const char* v = std::getenv(var);
    if (v == nullptr || *v == '\0') continue;
    std::string root(v);
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    bool seen = false;
    for (const auto& r : roots) seen = seen || r == root;
    if (!seen) roots.push_back(root);
  }
  return roots;
}

// Where the search looked, for messages.
std::string search_text() {
  return fmt::format("$ASCEND_HOME_PATH/lib64 ({}), $ASCEND_TOOLKIT_HOME/lib64 ({}) and the loader path ({})",
                     env_text("ASCEND_HOME_PATH"), env_text("ASCEND_TOOLKIT_HOME"), env_text("LD_LIBRARY_PATH"));
}

// A hint naming the set_env.sh of a default install, when one exists (§1.1).
std::string set_env_hint() {
  std::vector<std::string> candidates = {"/usr/local/Ascend/cann/set_env.sh",
                                         "/usr/local/Ascend/ascend-toolkit/set_env.sh"};
  if (const char* home = std::getenv("HOME")) {
    candidates.push_back(fmt::format("{}/Ascend/cann/set_env.sh", home));
    candidates.push_back(fmt::format("{}/Ascend/ascend-toolkit/set_env.sh", home));
  }
  for (const auto& c : candidates) {
    if (access(c.c_str(), R_OK) == 0) return fmt::format("run `source {}`", c);
  }
  return "source the set_env.sh of the CANN install";
}

struct OpenResult {
  void* handle = nullptr;
  std::string path;
  std::string failure;  // "<path>: <dlerror>" of a file that exists but did not load
};

// dlopen of `lib` from each root's lib64, then by bare name; stops at the first that loads.
OpenResult open_library(const std::string& lib) {
  OpenResult r;
  std::vector<std::string> candidates;
  for (const auto& root : env_roots()) candidates.push_back(root + "/lib64/" + lib);
  candidates.push_back(lib);
  for (const auto& path : candidates) {
    const bool is_path = path.find('/') != std::string::npos;
    if (is_path && access(path.c_str(), F_OK) != 0) continue;
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
      r.handle = h;
      r.path = path;
      // Report the file the loader chose, not the bare name.
      link_map* map = nullptr;
      if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
          *map->l_name != '\0') {
        r.path = map->l_name;
      }
      return r;
    }
    const char* err = dlerror();
    const std::string text = err != nullptr ? err : "unknown dlopen error";
    if (is_path || text.find("No such file") == std::string::npos) {
      if (r.failure.empty()) r.failure = text;
    }
  }
  return r;
}

Status unavailable(std::string reason) { return Status(StatusCode::kUnsupported, std::move(reason)); }

std::string not_found(const std::string& what, const OpenResult& r) {
  if (!r.failure.empty()) {
    return fmt::format("{} found but dlopen failed: {} (its dependencies are found through the LD_LIBRARY_PATH "
                       "that set_env.sh exports; {})",
                       what, r.failure, set_env_hint());
  }
  return fmt::format("{} not found in {}; {} or set ASCEND_HOME_PATH, or use --backend emu", what, search_text(),
                     set_env_hint());
}

}  // namespace

Expected<std::shared_ptr<const AclLibraries>> AclLibraries::load() {
  auto libs = std::make_shared<AclLibraries>();
  OpenResult rt = open_library("libascendcl.so");
  if (rt.handle == nullptr) {
    OpenResult rt_new = open_library("libacl_rt.so");
    if (rt_new.handle == nullptr) {
      if (rt.failure.empty()) rt.failure = rt_new.failure;
      return unavailable(not_found("CANN runtime (libascendcl.so, or libacl_rt.so on CANN 8.5+)", rt));
    }
    rt = rt_new;
  }
  libs->runtime_ = {rt.path, rt.handle};
  OpenResult nn = open_library("libnnopbase.so");
  if (nn.handle == nullptr) return unavailable(not_found("libnnopbase.so (the aclnn tensor API)", nn));
  libs->nnopbase_ = {nn.path, nn.handle};

  AclApi& api = libs->api_;
  std::string missing;
  auto resolve = [&missing](void* handle, const std::string& path, bool required, const char* name) -> void* {
    void* sym = dlsym(handle, name);
    if (sym == nullptr && required && missing.empty()) {
      missing = fmt::format("{} does not export {}, which opgate requires (CANN older than the ascend-abi.md "
                            "baseline, or not a CANN library)",
                            path, name);
    }
    return sym;
  };
#define OPGATE_ACL_RESOLVE(lib, required, ret, name, params)                        \
  {                                                                                 \
    void* sym = resolve(libs->lib.handle, libs->lib.path, required != 0, #name);    \
    static_assert(sizeof(sym) == sizeof(api.name), "function pointer size");        \
    std::memcpy(&api.name, &sym, sizeof(sym));                                      \
  }
#define OPGATE_ACL_RESOLVE_RT(required, ret, name, params) OPGATE_ACL_RESOLVE(runtime_, required, ret, name, params)
#define OPGATE_ACL_RESOLVE_NN(required, ret, name, params) OPGATE_ACL_RESOLVE(nnopbase_, required, ret, name, params)
  OPGATE_ACL_RUNTIME_SYMBOLS(OPGATE_ACL_RESOLVE_RT)
  OPGATE_ACL_NNOPBASE_SYMBOLS(OPGATE_ACL_RESOLVE_NN)
#undef OPGATE_ACL_RESOLVE_NN
#undef OPGATE_ACL_RESOLVE_RT
#undef OPGATE_ACL_RESOLVE
  if (!missing.empty()) return unavailable(missing);

  // A custom operator package (libcust_opapi.so) is tried first, but only when the user names it.
  std::vector<std::string> wanted;
  if (const char* extra = std::getenv("OPGATE_ASCEND_OP_LIBS"); extra != nullptr && *extra != '\0') {
    std::string list(extra);
    for (size_t start = 0; start <= list.size();) {
      const size_t end = std::min(list.find(':', start), list.size());
      if (end > start) wanted.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  for (const char* lib : kOpLibraries) wanted.emplace_back(lib);
  std::string failures;
  for (const auto& lib : wanted) {
    OpenResult op;
    if (lib.find('/') == std::string::npos) {
      op = open_library(lib);
    } else if ((op.handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL)) != nullptr) {
      op.path = lib;
    } else {
      const char* err = dlerror();
      return unavailable(fmt::format("OPGATE_ASCEND_OP_LIBS names {}, which does not load: {}", lib,
                                     err != nullptr ? err : "unknown dlopen error"));
    }
    if (op.handle != nullptr) {
      libs->op_libraries_.push_back({op.path, op.handle});
    } else if (!op.failure.empty()) {
      failures += fmt::format("; {} found but dlopen failed: {}", lib, op.failure);
    }
  }
  if (libs->op_libraries_.empty()) {
    return unavailable(fmt::format("no aclnn operator library ({}) found in {}{}; install the CANN operator "
                                   "packages (ops/kernels) and {}",
                                   libs->op_library_names(), search_text(), failures, set_env_hint()));
  }
  // aclnn finds its operator kernels through ASCEND_OPP_PATH; without it every first phase fails
  // with 561107 (ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND, spec §1.2).
  const char* opp = std::getenv("ASCEND_OPP_PATH");
  if (opp == nullptr || *opp == '\0') {
    return unavailable(fmt::format("ASCEND_OPP_PATH is not set (aclnn finds its operator kernels there; every call "
                                   "would fail with 561107); {}, which sets it to <CANN root>/opp",
                                   set_env_hint()));
  }
  if (access(opp, F_OK) != 0) {
    return unavailable(fmt::format("ASCEND_OPP_PATH={} does not exist (aclnn finds its operator kernels there); {}",
                                   opp, set_env_hint()));
  }
  return std::shared_ptr<const AclLibraries>(std::move(libs));
}

std::optional<OpSymbol> AclLibraries::find_op_symbol(const std::string& name) const {
  for (const auto& lib : op_libraries_) {
    void* sym = dlsym(lib.handle, name.c_str());
    if (sym == nullptr) continue;
    OpSymbol s{sym, lib.path};
    Dl_info info{};
    if (dladdr(sym, &info) != 0 && info.dli_fname != nullptr) s.library = info.dli_fname;
    return s;
  }
  return std::nullopt;
}

std::string AclLibraries::op_library_names() const {
  std::string out;
  if (const char* extra = std::getenv("OPGATE_ASCEND_OP_LIBS"); extra != nullptr && *extra != '\0') out = extra;
  for (const char* lib : kOpLibraries) out += (out.empty() ? "" : ", ") + std::string(lib);
  return out;
}

std::string AclLibraries::loaded_op_libraries() const {
  std::string out;
  for (const auto& lib : op_libraries_) out += (out.empty() ? "" : ", ") + lib.path;
  return out;
}

nlohmann::json AclLibraries::describe() const {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& lib : op_libraries_) ops.push_back(lib.path);
  return {{"runtime", runtime_.path}, {"nnopbase", nnopbase_.path}, {"op_libraries", ops}};
}

}  // namespace opgate::ascend
