// Escaping text for the XML and HTML reports (junit.xml, report.html).
#pragma once

#include <string>

namespace opgate {

// &, <, >, " as entities; control characters other than newline and tab, which XML 1.0 forbids
// even escaped, as '?'.
std::string xml_escape(const std::string& s);

}  // namespace opgate
