// Problem: one parsed case of one operator, type-erased so the runner, the CLI and the backends
// handle every operator alike (style-and-layout.md B3). ProblemImpl<Traits> binds an operator's
// free functions from each layer into it.
#pragma once

#include <memory>
#include <string>
#include <typeindex>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/compare.h"
#include "core/reference_outputs.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate {

enum class FillMode { kExact, kRealistic, kAdversarial };
const char* fill_mode_name(FillMode m);
Expected<FillMode> parse_fill_mode(const std::string& name);

struct OpInfo;

class Problem {
 public:
  virtual ~Problem() = default;
  virtual const OpInfo& op() const = 0;
  // The operator's params with every default resolved (what a golden case.json stores).
  virtual nlohmann::json params_json() const = 0;
  // Descriptors of the aclnn call (inputs and outputs), after any per-case tensor overrides.
  virtual const SpecMap& specs() const = 0;
  // aclnn names of the outputs, in call order.
  virtual std::vector<std::string> output_names() const = 0;
  // The documented checks; Ok or kAclnnError with the code a correct kernel returns.
  virtual Status validate() const = 0;
  // Canonical inputs, already in their device dtypes, from the case seed.
  virtual Expected<TensorMap> fill(FillMode mode, uint64_t seed) const = 0;
  // Data-dependent preconditions the kernel does not check but needs (kInvalidCase if violated).
  virtual Status check_data(const TensorMap& inputs) const = 0;
  virtual RefOutputs reference(const TensorMap& inputs) const = 0;
  // Canonical inputs -> the exact memory images the aclnn call receives.
  virtual TensorMap pack(const TensorMap& inputs) const = 0;
  // Device output buffers to allocate: name -> (dtype, shape). The runner poisons them.
  virtual SpecMap output_images() const = 0;
  // Device output images -> canonical outputs named as in `reference`.
  virtual TensorMap unpack(const TensorMap& images) const = 0;
  // How each output is checked; `mode` matters because exact fills make accumulations exact.
  virtual ComparePlan compare_plan(const RefOutputs& ref, FillMode mode) const = 0;
  // An output element's position in domain terms (row, k, expert, head, page), for reports; for an
  // empty index, what the output's first dimension is ("batch", "expert"; "" when not known), the
  // axis of report.html's error picture.
  virtual std::string describe(const std::string& output, const std::vector<int64_t>& index,
                               const TensorMap& inputs) const = 0;

  // The typed params; aborts if `P` is not this operator's Params type.
  template <class P>
  const P& params() const {
    OPGATE_CHECK(params_type() == std::type_index(typeid(P)), "Problem::params: wrong Params type");
    return *static_cast<const P*>(params_ptr());
  }

 protected:
  virtual const void* params_ptr() const = 0;
  virtual std::type_index params_type() const = 0;
};

// Applies a case's "tensors" overrides ({"name": {"dtype": .., "shape": [..], "present": bool}})
// to derived specs; unknown tensor names or keys are errors naming them.
Status apply_spec_overrides(SpecMap& specs, const nlohmann::json& overrides);

// Binds one operator: Traits names its Params (the reference's problem descriptor), its Knobs
// (data-generation settings that do not change the call, e.g. a drop rate) and its functions in
// every layer:
//   Traits::info(); Traits::to_json(p, k); Traits::outputs(); Traits::validate(p, specs);
//   Traits::fill(p, k, specs, mode, seed); Traits::check_data(p, in); Traits::reference(p, in);
//   Traits::pack(p, in); Traits::output_images(p, specs); Traits::unpack(p, images);
//   Traits::compare_plan(p, ref, mode); Traits::describe(p, out, idx, in).
template <class Traits>
class ProblemImpl final : public Problem {
 public:
  using Params = typename Traits::Params;
  using Knobs = typename Traits::Knobs;
  ProblemImpl(Params p, Knobs k, SpecMap specs) : p_(std::move(p)), k_(std::move(k)), specs_(std::move(specs)) {}

  const OpInfo& op() const override { return Traits::info(); }
  nlohmann::json params_json() const override { return Traits::to_json(p_, k_); }
  const SpecMap& specs() const override { return specs_; }
  std::vector<std::string> output_names() const override { return Traits::outputs(); }
  Status validate() const override { return Traits::validate(p_, specs_); }
  Expected<TensorMap> fill(FillMode m, uint64_t seed) const override { return Traits::fill(p_, k_, specs_, m, seed); }
  Status check_data(const TensorMap& in) const override { return Traits::check_data(p_, in); }
  RefOutputs reference(const TensorMap& in) const override { return Traits::reference(p_, in); }
  TensorMap pack(const TensorMap& in) const override { return Traits::pack(p_, in); }
  SpecMap output_images() const override { return Traits::output_images(p_, specs_); }
  TensorMap unpack(const TensorMap& images) const override { return Traits::unpack(p_, images); }
  ComparePlan compare_plan(const RefOutputs& ref, FillMode m) const override {
    ComparePlan plan = Traits::compare_plan(p_, ref, m);
    scope_ascend_standards(plan, m == FillMode::kRealistic);
    return plan;
  }
  std::string describe(const std::string& out, const std::vector<int64_t>& idx,
                       const TensorMap& in) const override {
    return Traits::describe(p_, out, idx, in);
  }

 protected:
  const void* params_ptr() const override { return &p_; }
  std::type_index params_type() const override { return std::type_index(typeid(Params)); }

 private:
  Params p_;
  Knobs k_;
  SpecMap specs_;
};

}  // namespace opgate
