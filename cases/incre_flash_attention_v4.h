// Cases of aclnnIncreFlashAttentionV4: V3's JSON binding, generator, fills and compare plan
// (cases/incre_flash_attention_v3.h) plus the key kvPaddingSize, a generator that leaves room for
// left padding, and fills that put V3's data into each batch's window.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/chooser.h"
#include "cases/incre_flash_attention_v3.h"
#include "core/compare.h"
#include "core/op_registry.h"
#include "core/problem.h"
#include "reference/incre_flash_attention_v4.h"

namespace opgate::cases::incre_flash_attention_v4 {

using Params = ref::incre_flash_attention_v4::Params;
// V3's data knobs (mask pattern, table padding); the mask patterns apply inside each window.
using Knobs = incre_flash_attention_v3::Knobs;

const OpInfo& op_info();

// V3's params plus "kvPaddingSize": an integer (the tensor's one element) or absent/null (no
// tensor). Unknown keys and out-of-range values are errors naming the key.
Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j);
nlohmann::json to_json(const Params& p, const Knobs& k);

// V3's generator, then room for left padding (S grows) and a kvPaddingSize: mostly windows
// inside [0, S), sometimes negative padding or a window starting before 0.
nlohmann::json generate(Chooser& c);

// V3's canonical inputs for the same seed with each batch's KV axis (key, value, attenMask and a
// per-batch pseShift) rotated right by its window start, so window position t holds V3's position
// t; plus kvPaddingSize.
Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& specs, FillMode mode, uint64_t seed);

// V3's plan: the window changes which positions enter the budget, not its form.
ComparePlan compare_plan(const Params& p, const RefOutputs& ref, FillMode mode);

// V3's description with the window: "b 1, head 5 (kv head 1), d 17; L_b 30, 2 masked; window [90, 120)".
std::string describe(const Params& p, const std::string& output, const std::vector<int64_t>& index,
                     const TensorMap& inputs);

// Fluent construction for tests: V3's Builder plus kvPaddingSize.
class Builder {
 public:
  Builder() = default;
  explicit Builder(incre_flash_attention_v3::Builder b) : b_(std::move(b)) {}
  incre_flash_attention_v3::Builder& v3() { return b_; }
  Builder& padding(int64_t p) { pad_ = p; has_pad_ = true; return *this; }
  nlohmann::json json() const { auto [p, k] = build(); return to_json(p, k); }
  // Aborts on an inconsistent combination (a test bug, not an input error).
  std::pair<Params, Knobs> build() const;

 private:
  incre_flash_attention_v3::Builder b_;
  bool has_pad_ = false;
  int64_t pad_ = 0;
};

}  // namespace opgate::cases::incre_flash_attention_v4
