// The ci tier of IncreFlashAttentionV3 drives every tiling path of the emulated kernel (issue 12):
// the facts below are derived from the case file, the schedule of §1.4.7 and the generated masks,
// so a case edit that loses one (a shorter L, a different seed, a mask that no longer covers a
// split) fails here and not silently in the mutation score.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/case.h"
#include "tests/device/incre_flash_attention_v3_testing.h"

namespace opgate::emu::incre_flash_attention_v3 {
namespace {

namespace ifa_cases = ifa_testing::ifa_cases;
namespace ifa_ref = ref::incre_flash_attention_v3;

// What one case makes the kernel do, over all its (batch) rows.
struct Facts {
  bool int8_kv = false, float_kv = false;
  int64_t max_splits = 0;              // flash-decode splits of one row
  int64_t max_tiles_in_split = 0;      // S2 tiles inside one split (or the whole row)
  bool ragged_tile = false;            // a row's last tile is shorter than the tile length
  bool ragged_split = false;           // a split row's last split is shorter than the others
  bool masked_first_tile = false;      // a wholly masked tile followed by a tile with unmasked positions
  bool masked_split_partial_row = false;  // a wholly masked split in a row that has unmasked positions
  bool fully_masked_split_row = false;    // a row masked everywhere and cut into >= 2 splits
  std::set<double> tie_offsets_zero_rows;  // quantOffset2 values with fraction .5 on L = 0 rows
  ifa_ref::QuantMode quant = ifa_ref::QuantMode::kNone;
};

Facts facts_of(const Case& c) {
  const auto pk = ifa_cases::from_json(c.params).value();
  const ifa_ref::Params& p = pk.first;
  const TensorMap in = ifa_cases::fill(p, pk.second, ifa_ref::specs(p), c.fill, c.seed).value();
  const Schedule s = schedule(p);
  const std::vector<int64_t> lengths = ifa_ref::effective_lengths(p);
  auto masked = [&](int64_t b, int64_t t) {
    return p.has_mask && t < p.mask_seq && in.at("attenMask").get(b * p.mask_seq + t) != 0;
  };
  auto all_masked = [&](int64_t b, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      if (!masked(b, t)) return false;
    }
    return true;
  };
  Facts f;
  f.int8_kv = p.kv_dtype == DType::kI8;
  f.float_kv = !f.int8_kv;
  f.quant = p.quant;
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t len = lengths[static_cast<size_t>(b)];
    if (len == 0) {
      if (p.quant != ifa_ref::QuantMode::kNone && p.has_quant_offset) {
        const Tensor& off = in.at("quantOffset2");
        for (int64_t i = 0; i < off.numel(); ++i) {
          const double x = off.get(i);
          if (std::fabs(x - std::trunc(x)) == 0.5) f.tie_offsets_zero_rows.insert(x);
        }
      }
      continue;
    }
    const int64_t split = s.split_len > 0 ? s.split_len : len;
    const int64_t splits = (len + split - 1) / split;
    f.max_splits = std::max(f.max_splits, splits);
    if (splits >= 2 && len % split != 0) f.ragged_split = true;
    const bool row_all = all_masked(b, 0, len);
    if (row_all && splits >= 2) f.fully_masked_split_row = true;
    for (int64_t s0 = 0; s0 < len; s0 += split) {
      const int64_t s1 = std::min(len, s0 + split);
      if (splits >= 2 && !row_all && all_masked(b, s0, s1)) f.masked_split_partial_row = true;
      const int64_t tiles = (s1 - s0 + s.tile - 1) / s.tile;
      f.max_tiles_in_split = std::max(f.max_tiles_in_split, tiles);
      if (tiles >= 2 && (s1 - s0) % s.tile != 0) f.ragged_tile = true;
      if (tiles >= 2 && all_masked(b, s0, s0 + s.tile) && !all_masked(b, s0 + s.tile, s1)) f.masked_first_tile = true;
    }
  }
  return f;
}

std::vector<std::pair<std::string, Facts>> ci_facts() {
  auto cases = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/incre_flash_attention_v3/ci.json");
  EXPECT_TRUE(cases.has_value()) << cases.status().message();
  std::vector<std::pair<std::string, Facts>> out;
  if (!cases) return out;
  for (const Case& c : *cases) out.emplace_back(c.id, facts_of(c));
  return out;
}

// The ids of the ci cases with a fact; the test asserts it is not empty and names the cases.
template <typename Pred>
std::string cases_with(const std::vector<std::pair<std::string, Facts>>& all, Pred pred) {
  std::string ids;
  for (const auto& [id, f] : all) {
    if (pred(f)) ids += (ids.empty() ? "" : " ") + id;
  }
  return ids;
}

TEST(IncreFlashAttentionV3Tiling, ci_runs_the_online_rescale_over_ragged_tiles) {
  const auto all = ci_facts();
  // int8 KV (1024-position tiles for G > 1) and float KV (2048 for G >= 10): >= 2 tiles, ragged.
  EXPECT_NE(cases_with(all, [](const Facts& f) { return f.int8_kv && f.max_tiles_in_split >= 2 && f.ragged_tile; }), "");
  EXPECT_NE(cases_with(all, [](const Facts& f) { return f.float_kv && f.max_tiles_in_split >= 2 && f.ragged_tile; }), "");
  // A wholly masked first tile: its m = -1e12 and l = tile length must be rescaled to 0.
  EXPECT_NE(cases_with(all, [](const Facts& f) { return f.masked_first_tile; }), "");
}

TEST(IncreFlashAttentionV3Tiling, ci_runs_the_flash_decode_combine_on_masked_splits) {
  const auto all = ci_facts();
  EXPECT_NE(cases_with(all, [](const Facts& f) { return f.max_splits >= 2 && f.ragged_split; }), "");
  EXPECT_NE(cases_with(all, [](const Facts& f) { return f.masked_split_partial_row; }), "");
  EXPECT_NE(cases_with(all, [](const Facts& f) { return f.fully_masked_split_row; }), "");
  // Splits that hold more than one tile: the rescale inside a split, then the combine.
  EXPECT_NE(cases_with(all, [](const Facts& f) { return f.max_splits >= 2 && f.max_tiles_in_split >= 2; }), "");
}

TEST(IncreFlashAttentionV3Tiling, ci_has_int8_output_ties_on_zero_length_rows) {
  const auto all = ci_facts();
  // rne and half-away differ on +-0.5 and +-2.5 (not on +-1.5): per-tensor and per-channel each.
  auto splits_modes = [](const Facts& f) {
    for (double x : f.tie_offsets_zero_rows) {
      if (std::fmod(std::fabs(x) - 0.5, 2.0) == 0.0) return true;
    }
    return false;
  };
  EXPECT_NE(cases_with(all, [&](const Facts& f) { return f.quant == ifa_ref::QuantMode::kPerTensor && splits_modes(f); }), "");
  EXPECT_NE(cases_with(all, [&](const Facts& f) { return f.quant == ifa_ref::QuantMode::kPerChannel && splits_modes(f); }), "");
}

}  // namespace
}  // namespace opgate::emu::incre_flash_attention_v3
