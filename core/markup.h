// Escaping text for the XML and HTML reports (junit.xml, report.html).
#pragma once

#include <string>

namespace opgate {

// &, <, >, " as entities; control characters other than newline and tab, which XML 1.0 forbids
// even escaped, as '?'.
std::string xml_escape(const std::string& s);

// One line of text for a terminal or summary.txt, which people `cat`: a line break or tab becomes
// a space and other control bytes (ESC sequences that recolour or clear a terminal, NUL) are dropped.
std::string printable(const std::string& text);

}  // namespace opgate
