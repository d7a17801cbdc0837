// The shared harness behind every fuzz_<op> target (style-and-layout.md B5, B11): bytes -> case ->
// parse -> validate -> fill -> pack/unpack checks -> the runner (reference, emu backend, comparison),
// aborting with a "==opgate-fuzz== finding <kind>" line on any broken invariant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "core/case.h"
#include "core/problem.h"
#include "core/status.h"

namespace opgate::fuzz {

// An operator's own layout round trip (e.g. "pack is the identity"), given the problem, its
// canonical inputs and their packed images; returns "" or what is broken.
using LayoutCheck = std::function<std::string(const Problem& problem, const TensorMap& canonical,
                                              const TensorMap& packed)>;

// The LayoutCheck of operators whose aclnn tensors are the canonical ones (dense ND): pack is the
// identity on the inputs and unpack the identity on patterned output images.
std::string identity_layout(const Problem& problem, const TensorMap& canonical, const TensorMap& packed);

// The body of LLVMFuzzerTestOneInput for operator `stem`. The device is OPGATE_FUZZ_BACKEND
// (default "emu"; "fault:<defect>" for planted-bug demonstrations). Always returns 0.
int run_op_target(const char* stem, const uint8_t* data, size_t size, const LayoutCheck& layout_check = {});

// A rejected call must carry a documented aclnn code (or be kInvalidCase: a precondition the kernel
// trusts, which the case breaks): "" if `st` does, else what is wrong.
std::string rejection_problem(const Status& st);

// Prints "==opgate-fuzz== finding <kind> in <target>: <what>" (and the case, if any) and aborts.
// `opgate fuzz` names the regression file after <kind>.
[[noreturn]] void report_finding(const std::string& target, const std::string& kind, const std::string& what,
                                 const Case* c = nullptr);

}  // namespace opgate::fuzz
