#include "tools/case_file.h"

namespace opgate::cli {

Status write_case_file(const std::string& path, const Case& c, const std::string& note) {
  OPGATE_ASSIGN_OR_RETURN(CaseFileStream stream, CaseFileStream::open(path));
  OPGATE_TRY(stream.header(c.op, note));
  OPGATE_TRY(stream.add(c));
  return stream.finish();
}

}  // namespace opgate::cli
