// Binds one operator's per-layer functions to the generic ProblemImpl (core/problem.h). Every
// operator names them identically (style-and-layout.md B5) — cases/<op>: to_json, from_json, fill,
// compare_plan, describe, op_info; reference/<op>: specs, validate, check_data, reference;
// device/layout/<op>: pack, output_images, unpack — so the binding is written once, here, and
// expanded at the end of each cases/<op>.cpp, inside namespace opgate::cases::<op>, where `ref`
// and `layout` alias the operator's reference and layout namespaces. A macro, because C++ cannot
// pass a namespace as a template argument.
//
// OPGATE_BIND_PROBLEM(op, outputs) defines, in an anonymous namespace, `Traits` (for
// ProblemImpl<Traits>) and `parse` (for OpInfo); `outputs` is an expression giving the output
// names, e.g. (std::vector<std::string>{"y"}).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/problem.h"

#define OPGATE_BIND_PROBLEM(OP, OUTPUTS)                                                                    \
  namespace {                                                                                               \
  struct Traits {                                                                                           \
    using Params = ::opgate::cases::OP::Params;                                                             \
    using Knobs = ::opgate::cases::OP::Knobs;                                                               \
    static const OpInfo& info() { return op_info(); }                                                       \
    static nlohmann::json to_json(const Params& p, const Knobs& k) { return ::opgate::cases::OP::to_json(p, k); } \
    static std::vector<std::string> outputs() { return OUTPUTS; }                                           \
    static Status validate(const Params& p, const SpecMap& s) { return ref::validate(p, s); }               \
    static Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& s, FillMode m,          \
                                    uint64_t seed) {                                                        \
      return ::opgate::cases::OP::fill(p, k, s, m, seed);                                                   \
    }                                                                                                       \
    static Status check_data(const Params& p, const TensorMap& in) { return ref::check_data(p, in); }       \
    static RefOutputs reference(const Params& p, const TensorMap& in) { return ref::reference(p, in); }     \
    static TensorMap pack(const Params& p, const TensorMap& in) { return layout::pack(p, in); }             \
    static SpecMap output_images(const Params& p, const SpecMap& s) { return layout::output_images(p, s); } \
    static TensorMap unpack(const Params& p, const TensorMap& images) { return layout::unpack(p, images); } \
    static ComparePlan compare_plan(const Params& p, const RefOutputs& r, FillMode m) {                     \
      return ::opgate::cases::OP::compare_plan(p, r, m);                                                    \
    }                                                                                                       \
    static std::string describe(const Params& p, const std::string& out, const std::vector<int64_t>& idx,   \
                                const TensorMap& in) {                                                      \
      return ::opgate::cases::OP::describe(p, out, idx, in);                                                \
    }                                                                                                       \
  };                                                                                                        \
  Expected<std::unique_ptr<Problem>> parse(const nlohmann::json& params, const nlohmann::json& overrides) { \
    OPGATE_ASSIGN_OR_RETURN(auto pk, from_json(params));                                                    \
    SpecMap specs = ref::specs(pk.first);                                                                   \
    OPGATE_TRY(apply_spec_overrides(specs, overrides));                                                     \
    return std::unique_ptr<Problem>(                                                                        \
        std::make_unique<ProblemImpl<Traits>>(pk.first, pk.second, std::move(specs)));                      \
  }                                                                                                         \
  }  // namespace
