// Strict reading of a case's params object: typed getters with defaults and range checks, and a
// final check that names any key no getter asked for (DESIGN.md §5: unknown keys are errors).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/status.h"

namespace opgate {

// One accepted key of an operator's case params. Each cases/<op>.cpp keeps one table of them
// (param_docs()): its reader checks every key against it, `opgate list --params-of` prints it, the
// README's generated section holds it and the unknown-key error lists it (cases/param_docs.h).
struct ParamDoc {
  const char* name;
  const char* type;     // integer, real, bool, dtype, string, integer list
  const char* def;      // the default, in words where it follows from other keys
  const char* meaning;
};

class ParamReader {
 public:
  // With `docs`, every key a getter asks for must be in the table (a programming error aborts: the
  // table cannot fall behind the code), and the unknown-key error lists the table's keys, those
  // read before the reader (strings, lists) included.
  explicit ParamReader(const nlohmann::json& params, const std::vector<ParamDoc>* docs = nullptr)
      : j_(params), docs_(docs) {}

  // Each getter records the first error and returns the default after it.
  int64_t integer(const char* key, int64_t def, int64_t lo, int64_t hi);
  double real(const char* key, double def, double lo, double hi);
  bool boolean(const char* key, bool def);
  DType dtype(const char* key, DType def);
  // Ok, or the first error; unknown keys are reported with the list of known ones.
  Status finish() const;

 private:
  const nlohmann::json* take(const char* key);
  void fail(const std::string& msg);

  const nlohmann::json& j_;
  const std::vector<ParamDoc>* docs_;
  std::set<std::string> known_;
  Status error_;
};

}  // namespace opgate
