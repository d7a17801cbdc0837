// Escaping for the XML and HTML reports.
#include "core/markup.h"

namespace opgate {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') {
          out += '?';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (ch == '\n' || ch == '\r' || ch == '\t') {
      out += ' ';
    } else if (byte >= 0x20 && byte != 0x7f) {
      out += ch;
    }
  }
  return out;
}

}  // namespace opgate
