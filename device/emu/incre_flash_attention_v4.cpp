// Emulation of aclnnIncreFlashAttentionV4: the kernel's KV window from the kvPaddingSize tensor
// (written here from the docs' formula, not taken from the reference), then V3's kernel model over
// it; the defects move the window the ways a kernel could get it wrong.
#include "device/emu/incre_flash_attention_v4.h"

#include <algorithm>

#include "device/emu/incre_flash_attention_v3.h"

namespace opgate::emu::incre_flash_attention_v4 {
namespace {

namespace ifa4 = ref::incre_flash_attention_v4;
using ifa4::KvCache;
using ifa4::KvWindow;
using ifa4::Params;

enum class Defect {
  kNone,
  kPaddingIgnored,
  kWindowShifted,
  kWindowOneLonger,
  kPaddingOnRight,
  kNegativeNotClamped,
  kOutOfRangeClamped,
  kPaddingWithoutLengths,
  kMaskWindowRelative,
};

using DefectEntry = ::opgate::DefectEntry<Defect>;

constexpr DefectEntry kDefects[] = {
    {Defect::kPaddingIgnored, "ifa4.padding_ignored",
     "kvPaddingSize is ignored: every batch attends to [0, L_b) as in V3"},
    {Defect::kWindowShifted, "ifa4.window_off_by_one",
     "the window starts one position late: [S - p - L_b + 1, S - p + 1) (reads the first padding slot)"},
    {Defect::kWindowOneLonger, "ifa4.window_one_longer",
     "the window starts one position early and keeps its end: [S - p - L_b - 1, S - p)"},
    {Defect::kPaddingOnRight, "ifa4.padding_applied_on_right",
     "the padding is taken as leading the keys: window [p, p + L_b) instead of ending at S - p"},
    {Defect::kNegativeNotClamped, "ifa4.negative_padding_not_clamped",
     "a negative kvPaddingSize is used as is instead of as 0, so the window ends past S"},
    {Defect::kOutOfRangeClamped, "ifa4.out_of_range_window_clamped",
     "a window starting before 0 is clipped to [0, S - p) instead of giving an all-zero row"},
    {Defect::kPaddingWithoutLengths, "ifa4.padding_without_actual_seq_lengths",
     "left padding is applied when actualSeqLengths is absent (L_b = S, so the window starts at -p)"},
    {Defect::kMaskWindowRelative, "ifa4.mask_read_window_relative",
     "attenMask and pseShift are read at window-relative positions 0 .. L_b - 1 instead of the keys' positions"},
};

// The kernel's window of every batch: pad = max(kvPaddingSize[0], 0), end = S - pad,
// start = end - L_b; start < 0 gives an empty window (the all-zero row). Padding applies with
// actualSeqLengths given and KV one contiguous tensor only.
std::vector<KvWindow> kernel_windows(const Params& p, const TensorMap& in, Defect defect) {
  const auto& b = p.base;
  std::vector<KvWindow> w = ref::incre_flash_attention_v3::full_windows(b);
  const auto it = in.find("kvPaddingSize");
  const bool lengths_given = (b.has_actual_seq_lengths && !b.actual_seq_lengths.empty()) ||
                             defect == Defect::kPaddingWithoutLengths;
  if (it == in.end() || it->second.numel() < 1 || !lengths_given || b.kv_cache != KvCache::kTensor ||
      defect == Defect::kPaddingIgnored) {
    return w;
  }
  const auto raw = static_cast<int64_t>(it->second.get(0));
  const int64_t pad = defect == Defect::kNegativeNotClamped ? raw : std::max<int64_t>(raw, 0);
  for (KvWindow& x : w) {
    const int64_t len = x.length;
    int64_t start = b.seq - pad - len;
    if (defect == Defect::kPaddingOnRight) start = pad;
    if (defect == Defect::kWindowShifted) ++start;
    if (start < 0 && defect == Defect::kOutOfRangeClamped) {
      x = {0, std::max<int64_t>(b.seq - pad, 0), 0};
      continue;
    }
    if (start < 0) {
      x = {0, 0, 0};
      continue;
    }
    x = {start, len, start};
    if (defect == Defect::kWindowOneLonger) x = {start - 1, len + 1, start - 1};
    if (defect == Defect::kMaskWindowRelative) x.aux_start = 0;
  }
  return w;
}

}  // namespace

Status run(const Params& p, const TensorMap& in, TensorMap& out, const std::string& defect_name) {
  OPGATE_ASSIGN_OR_RETURN(const Defect defect,
                          ::opgate::parse_defect(kDefects, Defect::kNone, defect_name, "incre_flash_attention_v4"));
  return incre_flash_attention_v3::run_window(p.base, in, out, "", kernel_windows(p, in, defect));
}

std::vector<DefectInfo> defects() { return defect_infos(kDefects); }

}  // namespace opgate::emu::incre_flash_attention_v4
