// What marks a tensor dump folder (harness/dump.h writes them, `run --overwrite` removes the ones
// in failed/): the first line of its README.txt and its subfolders of .npy files.
#pragma once

namespace opgate {

inline constexpr const char* kTensorDumpMarker = "opgate tensor dump";
inline constexpr const char* kTensorDumpFolders[] = {"inputs", "expected", "got", "allowance", "care"};

}  // namespace opgate
