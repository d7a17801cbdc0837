// The stages of one case (style-and-layout.md B4), each a function with a typed input and output:
// (1) parse (harness/prepare.h) -> (2) validate -> (3) fill -> (4) reference -> (5) pack, and
// against golden the golden expected values -> (5b) plan -> (6) device -> (7) guards and inputs ->
// (8) unpack -> (9) compare -> (10) vacuity -> (11) determinism. A stage that ends the case returns
// an Outcome (the verdict and its one-line reason); harness/runner.cpp runs them in order and times
// them.
#pragma once

#include "harness/twin_folder.h"
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/backend.h"
#include "core/compare.h"
#include "core/guard.h"
#include "core/problem.h"
#include "core/reference_outputs.h"
#include "core/result.h"
#include "harness/golden.h"
#include "harness/prepare.h"

namespace opgate::stages {

// Why the case ends: its verdict and the one-line reason.
struct Outcome {
  Verdict verdict;
  std::string reason;
};
// A stage's output, or the Outcome that ends the case there.
template <class T>
using Staged = std::variant<T, Outcome>;

// (1) parse: the prepared problem, or INVALID_CASE.
Staged<const Problem*> parse(const PreparedCase& pc);
// (2) validate: the call against the case's expectation (an `expect` case ends here, rejected by
// reference and device alike), the backend's support, and against golden that the folder was made
// from this very case. nullopt: run the case.
std::optional<Outcome> validate(const PreparedCase& pc, const Problem& problem, Backend& backend);
// (3) fill: the canonical inputs from the case seed, with the per-tensor fills and data checks.
Staged<TensorMap> fill(const Problem& problem, const Case& c);
// (4) reference: expected values, magnitudes and care masks in double.
RefOutputs reference(const Problem& problem, const TensorMap& inputs);
// How many times this process has run stage (4): a run against a format 2 golden runs it never.
int64_t reference_calls();
// (5) pack: the exact memory images the aclnn call receives.
TensorMap pack(const Problem& problem, const TensorMap& inputs);
// (5, against golden) the golden inputs must be the packed ones and the golden values must agree
// with the reference; then the golden values become the expected values.
// Format 1 only: the reference is still computed, for the magnitudes.
Staged<RefOutputs> golden_expected(RefOutputs ref, const GoldenCase& golden, const TensorMap& packed);
// (5, against a format 2 golden) the golden inputs must be the packed ones; the golden files then
// give everything the comparison needs (values, magnitudes, care masks, slack): no reference runs.
Staged<RefOutputs> golden_stored(const GoldenCase& golden, const TensorMap& packed);

// (5b) plan: how each output is compared (check kind, tolerance, care), from the expected values;
// made before the device runs.
ComparePlan plan(const Problem& problem, const RefOutputs& ref, FillMode fill, Standard gate = Standard::kBound);

// (6) device: one run on fresh poisoned, guarded output buffers.
struct DeviceRun {
  std::map<std::string, GuardedBuffer> buffers;
  TensorMap images;
  std::vector<std::string> warnings;  // the backend's findings that do not fail the case
};
Staged<DeviceRun> device(const Problem& problem, Backend& backend, const TensorMap& packed);
// (7, before the device) the digest of each packed input, kept for the check after the run.
std::map<std::string, InputDigest> input_digests(const TensorMap& packed);
// (7) guards untouched, and every input that is not also an output unchanged against its digest.
std::optional<Outcome> guards_and_inputs(const DeviceRun& run, const TensorMap& packed,
                                         const std::map<std::string, InputDigest>& before);
// (8) unpack: device images to canonical outputs.
TensorMap unpack(const Problem& problem, const DeviceRun& run);

// (9) compare: every output by its plan, failing elements described in domain terms. A missing
// output stops the case (BACKEND_ERROR) with the outputs compared before it.
struct Compared {
  std::vector<OutputResult> outputs;
  std::optional<Outcome> outcome;  // FAILED (each failing output) or BACKEND_ERROR (a missing one)
};
Compared compare(const Problem& problem, const ComparePlan& plan, const RefOutputs& ref, const TensorMap& got,
                 const TensorMap& inputs);
// (10) vacuity: why a perturbed copy of a passing output would pass too, for the first such output.
std::optional<std::string> vacuity(const ComparePlan& plan, const RefOutputs& ref, const TensorMap& got,
                                   const std::vector<OutputResult>& outputs);
// (9b) twin: on a device that is not the clean emulator, the emulator runs the same packed inputs
// as the dual-benchmark standard's low-precision twin, and each output gains its dual-benchmark
// verdict; on emu that standard is not applicable (the device is the twin). With `third_party`
// (run --twin) its files are the twin, on every backend, and an output without a file has none;
// a file of the wrong shape makes the case INVALID_CASE.
std::optional<Outcome> twin(const Problem& problem, const Backend& device, const ComparePlan& plan,
                            const RefOutputs& ref, const TensorMap& packed, const TensorMap& got,
                            const TwinFiles* third_party, std::vector<OutputResult>& outputs);
// (11) determinism: runs 2..repeat of the device must give bit-identical defined outputs.
std::optional<Outcome> determinism(const Problem& problem, Backend& backend, const TensorMap& packed,
                                const ComparePlan& plan, const RefOutputs& ref, const TensorMap& got, int repeat);

}  // namespace opgate::stages
