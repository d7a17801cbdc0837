// The one-line error of every command: a message that holds line breaks (a library's text, a
// quoted value) is printed on one line and cut to a bounded length, so bad input never floods the
// terminal or splits the error across lines.
#pragma once

#include <string>

#include "core/status.h"
#include "tools/cli_common.h"

namespace opgate::cli {

inline int fail_line(const Status& st) {
  constexpr size_t kMaxErrorChars = 2000;
  std::string text = st.message();
  for (char& ch : text) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  if (text.size() > kMaxErrorChars) text = text.substr(0, kMaxErrorChars) + "...";
  return fail(Status(st.code(), text, st.aclnn_code()));
}

}  // namespace opgate::cli
