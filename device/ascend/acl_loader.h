// Finds and loads the CANN libraries at run time (spec ascend-abi.md §1, §2, §9): the runtime
// (libascendcl.so, else libacl_rt.so), libnnopbase.so and the aclnn operator libraries, under
// $ASCEND_HOME_PATH/lib64, $ASCEND_TOOLKIT_HOME/lib64, then the dynamic loader's own search path
// (LD_LIBRARY_PATH). Every symbol is resolved once, here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "device/ascend/acl_abi.h"

namespace opgate::ascend {

// The runtime and nnopbase entry points; optional ones are nullptr when the library lacks them.
struct AclApi {
#define OPGATE_ACL_POINTER(required, ret, name, params) ret(*name) params = nullptr;
  OPGATE_ACL_RUNTIME_SYMBOLS(OPGATE_ACL_POINTER)
  OPGATE_ACL_NNOPBASE_SYMBOLS(OPGATE_ACL_POINTER)
#undef OPGATE_ACL_POINTER
};

// An aclnn symbol and the file that defines it (found with dladdr).
struct OpSymbol {
  void* address = nullptr;
  std::string library;
};

// The loaded libraries. Handles are never closed: CANN libraries keep threads and global state
// that do not survive dlclose, and forked case processes inherit the mappings.
class AclLibraries {
 public:
  // Loads everything or returns kUnsupported with the exact reason: which library was not found
  // where, which symbol a library lacks, and which variable to set.
  static Expected<std::shared_ptr<const AclLibraries>> load();

  const AclApi& api() const { return api_; }
  // The first operator library (in lookup order) that exports `name`; nullopt if none does.
  std::optional<OpSymbol> find_op_symbol(const std::string& name) const;
  // "libopapi_transformer.so, libopapi.so, ..." as tried, for messages.
  std::string op_library_names() const;
  // The operator libraries that were loaded, comma-separated, for messages.
  std::string loaded_op_libraries() const;
  // Paths of the runtime, nnopbase and the operator libraries that were found (for reports).
  nlohmann::json describe() const;

 private:
  struct Loaded {
    std::string path;
    void* handle = nullptr;
  };
  AclApi api_;
  Loaded runtime_, nnopbase_;
  std::vector<Loaded> op_libraries_;
};

}  // namespace opgate::ascend
