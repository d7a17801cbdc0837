// The one adapter from the runner's CaseResult to the history's HistoryCase.
#pragma once

#include "core/report_folder.h"
#include "history/history_case.h"

namespace opgate::history {

HistoryCase history_case_from_result(const CaseResult& r);

}  // namespace opgate::history
