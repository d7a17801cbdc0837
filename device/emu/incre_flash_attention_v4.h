// CPU emulation of the aclnnIncreFlashAttentionV4 kernel: the kernel reads kvPaddingSize from its
// device tensor, moves each batch's KV window (the V4 docs' formula), and runs V3's numerics over
// the window (emu::incre_flash_attention_v3::run_window: same tiles, splits, casts); plus its
// catalogue of injectable window defects.
#pragma once

#include <string>
#include <vector>

#include "core/defect.h"
#include "core/status.h"
#include "core/tensor.h"
#include "reference/incre_flash_attention_v4.h"

namespace opgate::emu::incre_flash_attention_v4 {

// Runs the kernel model on the packed inputs and writes the pre-allocated out["attentionOut"];
// `defect` is "" (faithful) or a name from defects().
Status run(const ref::incre_flash_attention_v4::Params& p, const TensorMap& in, TensorMap& out,
           const std::string& defect);

// The injectable defects, each named "ifa4.<what>" with a one-line description.
std::vector<DefectInfo> defects();

}  // namespace opgate::emu::incre_flash_attention_v4
