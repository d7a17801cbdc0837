// The dual-benchmark's third-party twin from files (run --twin DIR): a low-precision run of the same
// cases elsewhere (a GPU, another library), one .npy per output at DIR/<op>/<case id>/<output>.npy,
// in the output's canonical shape (the shape results, reports and `repro --dump` give it). The files
// are read and checked before the run starts, like golden folders; a case or an output without a
// file has no twin, and its dual-benchmark verdict says so.
#pragma once

#include <map>
#include <string>

#include "core/problem.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate {

struct TwinFiles {
  std::string dir;   // DIR/<op>/<case id>
  TensorMap outputs;  // the outputs that have a file, each in its output's dtype
};

// Reads the case's folder under `root`. A missing folder gives no outputs (the run covers more
// cases than the third party did); an unreadable file, an unknown output name or a dtype that is
// neither the output's nor float32 holding only values of the output's dtype is an error naming
// the file. Shapes are checked against the computed output (twin_shape_problem).
Expected<TwinFiles> read_twin_files(const std::string& root, const std::string& op, const std::string& id,
                                    const Problem& problem);

// Why the third-party `twin` cannot stand beside output `name` of canonical shape `shape` ("" if it can).
std::string twin_shape_problem(const TwinFiles& files, const std::string& name, const Shape& shape);

}  // namespace opgate
