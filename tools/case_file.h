// Case files as opgate writes them (gen, shrink, hunt): one case per line so diffs stay
// reviewable, written as the cases come (to a file through a temporary one, or to stdout): a
// million generated cases took 2.5 GB held at once.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/case.h"
#include "core/npy.h"
#include "core/status.h"

namespace opgate::cli {

class CaseFileStream {
 public:
  static Expected<CaseFileStream> open(const std::string& path) {
    if (path.empty()) return CaseFileStream(std::nullopt);
    OPGATE_ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::open(path));
    return CaseFileStream(std::move(file));
  }
  Status header(const std::string& op, const std::string& note) {
    return put(fmt::format("{{\n  \"op\": \"{}\",\n  \"note\": {},\n  \"cases\": [", op, nlohmann::json(note).dump()));
  }
  Status add(const Case& c) {
    nlohmann::json j = case_to_json(c);
    j.erase("op");
    const char* sep = first_ ? "\n    " : ",\n    ";
    first_ = false;
    return put(sep + j.dump());
  }
  Status finish() {
    OPGATE_TRY(put("\n  ]\n}\n"));
    return file_ ? file_->commit() : Status::ok();
  }

 private:
  explicit CaseFileStream(std::optional<AtomicFileWriter> file) : file_(std::move(file)) {}
  Status put(const std::string& text) {
    if (file_) return file_->append(text);
    std::fputs(text.c_str(), stdout);
    return Status::ok();
  }
  std::optional<AtomicFileWriter> file_;
  bool first_ = true;
};

// A case file holding the one case `c`, at `path`.
Status write_case_file(const std::string& path, const Case& c, const std::string& note);

}  // namespace opgate::cli
