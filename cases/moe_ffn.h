// Cases of aclnnMoeFFN: the JSON binding of its params, the generator, the fills and the compare plan
// (cases/moe_ffn/README.md explains each choice).
#pragma once

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/chooser.h"
#include "core/compare.h"
#include "core/op_registry.h"
#include "core/problem.h"
#include "reference/moe_ffn.h"

namespace opgate::cases::moe_ffn {

using Params = ref::moe_ffn::Params;

// How the data is generated; does not change the call.
struct Knobs {
  // int8 paths: the re-quantisation scale maps a typical |hidden| range onto quantRange * 127, so
  // values above 1 saturate part of the hidden layer.
  double quant_range = 0.5;
  // exact fills: extra fraction bits (0-9) on x and the biases (fp paths), mantissa bits on
  // deqScale1 and sub-half-ulp fp32 bits on scale and offset (int8 paths), so the kernel's casts
  // round (and hit ties) inside an exact chain: a changed rounding mode moves a determined value.
  int64_t fine_bits = 0;
  // int8 paths: added to every offset, so that a * scale + offset reaches -128 (negative saturation).
  double offset_shift = 0;
  bool operator==(const Knobs& o) const {
    return quant_range == o.quant_range && fine_bits == o.fine_bits && offset_shift == o.offset_shift;
  }
};

const OpInfo& op_info();

// {"expertTokens" (array, or null for a null pointer), "M" (default: their sum), "K1", "N1",
//  "dtype" (x and weights: float16, bfloat16, int8), "yDtype", "deqScaleDtype", "activation",
//  "innerPrecise", "bias1", "bias2", "perChannelScale", "offsetLength" (elements of offset; absent = E),
//  "quantRange", "fineBits", "offsetShift"}; strict: unknown keys and
// out-of-range values are errors naming the key.
Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j);
nlohmann::json to_json(const Params& p, const Knobs& k);

// A valid, small problem drawn through the Chooser: every kernel path, every activation, 1 to 256
// experts with empty and skewed ones, N1 = 0 now and then.
nlohmann::json generate(Chooser& c);

// Canonical inputs in device dtypes. exact: small integers and powers of two (sparse weights), so
// both matmuls are exact in fp32/int32 and, with relu, the whole hidden layer is exact; realistic:
// normal data scaled like a model layer (hidden values spanning the activation's curved part);
// adversarial: hidden values deep in the activation's tails (half exp overflow), int8 extremes
// (acc1 beyond 2^24), saturating re-quantisation, deqScale with every truncated bit set.
Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& specs, FillMode mode, uint64_t seed);

ComparePlan compare_plan(const Params& p, const RefOutputs& ref, FillMode mode);

// "token 5 = expert 2, row 1 of 3; column 7".
std::string describe(const Params& p, const std::string& output, const std::vector<int64_t>& index,
                     const TensorMap& inputs);

// Fluent construction for tests: Builder().tokens({3, 0, 2}).k1(16).n1(32).bias2().build().
class Builder {
 public:
  Builder& dtype(DType d);
  Builder& y_dtype(DType d) { p_.y_dtype = d; return *this; }
  Builder& deq_dtype(DType d) { p_.deq_dtype = d; return *this; }
  // Sets expertTokens and M = their sum.
  Builder& tokens(std::vector<int64_t> counts);
  Builder& k1(int64_t k) { p_.k1 = k; return *this; }
  Builder& n1(int64_t n) { p_.n1 = n; return *this; }
  Builder& activation(std::string a) { p_.activation = std::move(a); return *this; }
  Builder& inner_precise(int64_t v) { p_.inner_precise = v; return *this; }
  Builder& bias1(bool on = true) { p_.has_bias1 = on; return *this; }
  Builder& bias2(bool on = true) { p_.has_bias2 = on; return *this; }
  Builder& per_channel(bool on = true) { p_.per_channel_scale = on; return *this; }
  Builder& offset_length(int64_t n) { p_.offset_length = n; return *this; }
  Builder& quant_range(double r) { k_.quant_range = r; return *this; }
  Builder& fine_bits(int64_t b) { k_.fine_bits = b; return *this; }
  Builder& offset_shift(double s) { k_.offset_shift = s; return *this; }
  std::pair<Params, Knobs> build() const { return {p_, k_}; }
  nlohmann::json json() const { return to_json(p_, k_); }

 private:
  Params p_;
  Knobs k_;
};

}  // namespace opgate::cases::moe_ffn
