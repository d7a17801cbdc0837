// Cases of aclnnIncreFlashAttentionV3: the JSON binding of its params, the generator, the fills and
// the compare plan (cases/incre_flash_attention_v3/README.md explains each choice).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cases/chooser.h"
#include "core/compare.h"
#include "core/op_registry.h"
#include "core/problem.h"
#include "reference/incre_flash_attention_v3.h"

namespace opgate::cases::incre_flash_attention_v3 {

using Params = ref::incre_flash_attention_v3::Params;
using ref::incre_flash_attention_v3::KvCache;
using ref::incre_flash_attention_v3::QuantMode;

// Which positions attenMask masks (per batch b): kMixed cycles random, prefix, all, none over b.
enum class MaskPattern { kMixed, kRandom, kPrefix, kAll, kNone, kSuffix };
// What blocktable holds past the blocks a batch needs: -1, or random 32-bit garbage.
enum class TablePad { kMinusOne, kGarbage };

// How the data is generated; does not change the call.
struct Knobs {
  MaskPattern mask_pattern = MaskPattern::kMixed;
  double mask_rate = 0.3;  // kRandom: probability that a position is masked
  // kPrefix: positions below min(mask_prefix, L_b) are masked; -1 draws the cut at random in [0, L_b].
  int64_t mask_prefix = -1;
  TablePad table_pad = TablePad::kMinusOne;
  bool operator==(const Knobs& o) const {
    return mask_pattern == o.mask_pattern && mask_rate == o.mask_rate && mask_prefix == o.mask_prefix &&
           table_pad == o.table_pad;
  }
};

const OpInfo& op_info();

// Strict parse of a case's params (keys listed in the README); unknown keys and out-of-range values
// are errors naming the key. Derived defaults (scaleValue = 1/sqrt(D), maxBlockNumPerSeq,
// blockNum, pseS, maskS, quant shapes by layout) are resolved here.
Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j);
// Every key with its resolved value; from_json(to_json(p, k)) gives (p, k) back.
nlohmann::json to_json(const Params& p, const Knobs& k);

// A valid, small problem drawn through the Chooser.
nlohmann::json generate(Chooser& c);

// Canonical inputs (ref::canonical_specs) from the seed. exact: small integers (QK exact in fp32);
// realistic: normal q/k, channel-biased v, model-like antiquant/quant parameters; adversarial:
// huge score ranges on even batches, tied keys with cancelling values on odd ones.
Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& specs, FillMode mode, uint64_t seed);

ComparePlan compare_plan(const Params& p, const RefOutputs& ref, FillMode mode);

// "b 1, head 5 (kv head 1), d 17; L_b 300, 12 masked".
std::string describe(const Params& p, const std::string& output, const std::vector<int64_t>& index,
                     const TensorMap& inputs);

// Fluent construction for tests and benchmarks; build() resolves the derived defaults like from_json.
class Builder {
 public:
  Builder& dtype(DType d) { j_["dtype"] = dtype_name(d); return *this; }
  Builder& kv_dtype(DType d) { j_["kvDtype"] = dtype_name(d); return *this; }
  Builder& out_dtype(DType d) { j_["outDtype"] = dtype_name(d); return *this; }
  Builder& batch(int64_t b) { j_["B"] = b; return *this; }
  Builder& heads(int64_t n, int64_t n2 = 0) { j_["numHeads"] = n; j_["numKeyValueHeads"] = n2; return *this; }
  Builder& head_dim(int64_t d) { j_["D"] = d; return *this; }
  Builder& seq(int64_t s) { j_["S"] = s; return *this; }
  Builder& layout(const std::string& l) { j_["inputLayout"] = l; return *this; }
  Builder& scale(double s) { j_["scaleValue"] = s; return *this; }
  Builder& inner_precise(int64_t v) { j_["innerPrecise"] = v; return *this; }
  Builder& lengths(std::vector<int64_t> l) { j_["actualSeqLengths"] = std::move(l); return *this; }
  Builder& list(std::vector<int64_t> s) { j_["kvCache"] = "list"; j_["kvSeqLens"] = std::move(s); return *this; }
  Builder& paged(int64_t block_size, bool four_d = false) {
    j_["kvCache"] = four_d ? "paged4d" : "paged3d"; j_["blockSize"] = block_size; return *this;
  }
  Builder& blocks(int64_t max_per_seq, int64_t num) { j_["maxBlockNumPerSeq"] = max_per_seq; j_["blockNum"] = num; return *this; }
  Builder& pse(int64_t batch = 0) { j_["pseShift"] = true; if (batch > 0) j_["pseBatch"] = batch; return *this; }
  Builder& mask(DType d = DType::kBool, int64_t rank = 4) {
    j_["attenMask"] = true; j_["maskDtype"] = dtype_name(d); j_["maskRank"] = rank; return *this;
  }
  Builder& antiquant(const std::string& mode, bool offset) { j_["antiquant"] = mode; j_["antiquantOffset"] = offset; return *this; }
  Builder& quant(const std::string& mode, bool offset) { j_["quantScale2"] = mode; j_["quantOffset2"] = offset; return *this; }
  Builder& mask_pattern(const std::string& m) { j_["maskPattern"] = m; return *this; }
  Builder& table_pad(const std::string& t) { j_["tablePad"] = t; return *this; }
  Builder& set(const std::string& key, nlohmann::json v) { j_[key] = std::move(v); return *this; }
  nlohmann::json json() const { return to_json(build().first, build().second); }
  // Aborts on an inconsistent combination (a test bug, not an input error).
  std::pair<Params, Knobs> build() const;

 private:
  nlohmann::json j_ = nlohmann::json::object();
};

}  // namespace opgate::cases::incre_flash_attention_v3
