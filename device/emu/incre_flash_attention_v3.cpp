// CPU emulation of the A2 aclnnIncreFlashAttentionV3 kernel: the C+V template's numerics of
// attention-and-ffn.md §1.4.3 (fp32 QK, fp32 online softmax over S2 tiles, P cast with CAST_ROUND,
// fp32 PV), §1.4.2 (MSD int8 decomposition), §1.4.4/§1.4.5 (output cast and quantisation), the
// tiling of §1.4.7 (split ratio per template, cores per SoC: README "Kernel-source audit") and KV
// addressing of §1.3 from the packed device images; plus named defects.
#include "device/emu/incre_flash_attention_v3.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/parallel.h"
#include "reference/incre_flash_attention_v3/incre_flash_attention_v3_convert.h"
#include "reference/math/shared_half.h"

namespace opgate::emu::incre_flash_attention_v3 {

namespace detail {

float cast_p(float x, DType t, Rounding r) {
  uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  const uint32_t a = u & 0x7FFFFFFFu;
  // Normal in t (fp16 >= 2^-14, bf16 >= 2^-126) and below 2^15, so rounding up cannot overflow:
  // t's values there are the floats whose low `drop` bits are zero.
  const bool f16 = t == DType::kF16;
  const bool fast = (t == DType::kF16 || t == DType::kBF16) && a >= (f16 ? 0x38800000u : 0x00800000u) && a < 0x47000000u;
  if (!fast) return static_cast<float>(round_to(t, x, r));
  const int drop = f16 ? 13 : 16;
  const uint32_t half = 1u << (drop - 1);
  switch (r) {
    case Rounding::kNearestEven: u += half - 1 + ((u >> drop) & 1u); break;
    case Rounding::kHalfAway: u += half; break;  // on the magnitude bits: the sign bit is above them
    case Rounding::kTowardZero: break;
  }
  u &= ~((1u << drop) - 1u);  // a carry out of the mantissa steps the exponent, as it should
  float y = 0;
  std::memcpy(&y, &u, sizeof y);
  return y;
}

}  // namespace detail

namespace {

namespace ifa = ref::incre_flash_attention_v3;
using ifa::KvCache;
using ifa::Params;
using ifa::QuantMode;

enum class Defect {
  kNone,
  kMaskAdded,
  kPseScaled,
  kGqaModulo,
  kBlockIndexCeil,
  kActualLenPlusOne,
  kNoMaxSubtraction,
  kQuantScaleKvHead,
  kHalfPvAccumulation,
  kFullyMaskedZero,
  kValueOffsetIgnored,
  kUnweightedCombine,
  kBshReadAsBnsd,
  kTileRescaleSkipped,
  kRowSumNotRescaled,
  kMaskedSplitSkipped,
  kCombineMaxFromZero,
  kPCastTruncates,
};

using DefectEntry = ::opgate::DefectEntry<Defect>;

constexpr DefectEntry kDefects[] = {
    {Defect::kMaskAdded, "ifa.mask_added_not_replaced",
     "masked scores get -1e12 added (fp32) instead of being replaced by it, so a fully masked row keeps the "
     "order of its huge scores"},
    {Defect::kPseScaled, "ifa.pse_scaled", "pseShift is added before the scale multiply, so it is scaled too"},
    {Defect::kGqaModulo, "ifa.gqa_n_mod_n2", "query head n reads KV head n % N2 instead of n / G"},
    {Defect::kBlockIndexCeil, "ifa.block_index_off_by_one",
     "page attention computes the logical block of position t as ceil(t / blockSize) instead of floor"},
    {Defect::kActualLenPlusOne, "ifa.actual_len_off_by_one",
     "each batch attends to L_b + 1 positions (one past actualSeqLengths)"},
    {Defect::kNoMaxSubtraction, "ifa.no_max_subtraction",
     "the softmax exponentiates raw scores without subtracting the running maximum"},
    {Defect::kQuantScaleKvHead, "ifa.quant_scale_kv_head",
     "per-channel quantScale2/quantOffset2 are indexed by the KV head (n2*D + d) instead of the query head"},
    {Defect::kHalfPvAccumulation, "ifa.fp16_pv_accumulation", "the PV product is accumulated in fp16 instead of fp32"},
    {Defect::kFullyMaskedZero, "ifa.fully_masked_row_zero",
     "a fully masked row outputs zeros (FIA-style row-invalid handling) instead of the mean of V"},
    {Defect::kValueOffsetIgnored, "ifa.value_antiquant_offset_ignored",
     "int8 value dequantisation multiplies by the scale but drops antiquantOffset"},
    {Defect::kUnweightedCombine, "ifa.flash_decode_unweighted_combine",
     "the flash-decode combine weights splits by their row sums without the exp(m_j - m) rescale"},
    {Defect::kBshReadAsBnsd, "ifa.bsh_kv_read_as_bnsd", "BSH/BSND key and value are addressed with BNSD strides"},
    {Defect::kTileRescaleSkipped, "ifa.tile_rescale_skipped",
     "when a later S2 tile raises the running max, the accumulator and row sum are not rescaled by exp(m_old - m_new)"},
    {Defect::kRowSumNotRescaled, "ifa.row_sum_not_rescaled",
     "the online softmax rescales the PV accumulator but adds the new tile's row sum to the unrescaled old one"},
    {Defect::kMaskedSplitSkipped, "ifa.masked_split_skipped_in_combine",
     "the flash-decode combine gives weight 0 to splits whose max is the mask value, so a fully masked row under "
     "splits divides 0 by 0"},
    {Defect::kCombineMaxFromZero, "ifa.combine_max_from_zero",
     "the flash-decode combine starts its max at 0 instead of -inf, so splits whose scores are all far below 0 "
     "underflow to weight 0"},
    {Defect::kPCastTruncates, "ifa.p_cast_truncates",
     "P is cast to fp16/bf16 for the PV product by truncation (round toward zero) instead of the kernel's rounding"},
};

// Flash-decode split rule of each modelled template (tiling_check.cpp CheckCoreOkFlag): split
// when B·N2 < tenths/10 · cores, the cores being the SoC's AIV count (tiling.cpp SetCoreNum). Only
// the summation order depends on it. The cube-view template's rule (B·N2 <= 0.5·AIC) belongs to a
// template the emulator does not model (runs_cube_view()).
struct SplitRule {
  Template kernel;
  int64_t tenths;
};
constexpr SplitRule kSplitRules[] = {
    {Template::kCubeVector, 4},  // "0.4, 经验值"
    {Template::kAllVector, 5},   // "全V模板可以按0.5切分"
};
constexpr float kMaskValue = -1.0e12f;
// PV cube step: 16 positions accumulated per fractal before joining the running fp32 sum.
constexpr int64_t kCubeK = 16;
// KV positions the emulator converts to float at a time within a tile (not a kernel parameter).
constexpr int64_t kPiece = 128;
static_assert(kPiece % kCubeK == 0, "pieces hold whole PV fractals");

Expected<Defect> parse_defect(const std::string& name) {
  return ::opgate::parse_defect(kDefects, Defect::kNone, name, "incre_flash_attention_v3");
}

float to_f16(float x, Rounding r) { return static_cast<float>(round_to(DType::kF16, x, r)); }

// i8a: round half away from zero, saturating (§1.4.2).
float i8a(float x) { return std::clamp(std::round(x), -128.0f, 127.0f); }

// MSD digits of x (|x| <= amax): digit_1 = i8a(x * 127 / amax), then residuals times 254.
void msd_digits(float x, float amax, int digits, std::array<float, 3>& out) {
  float r = amax > 0 ? (x * 127.0f) / amax : 0.0f;
  for (int i = 0; i < digits; ++i) {
    out[static_cast<size_t>(i)] = i8a(r);
    r = (r - out[static_cast<size_t>(i)]) * 254.0f;
  }
}

// sum_i R_i * 254^-(i-1), in fp32.
float msd_combine(const std::array<float, 3>& r, int digits) {
  float v = r[0] + r[1] / 254.0f;
  if (digits == 3) v += r[2] / (254.0f * 254.0f);
  return v;
}

// The KV images and the addressing of §1.3 (with the addressing defects). Tensor pointers and the
// block table are looked up once, not per row.
class KvSource {
 public:
  KvSource(const Params& p, const TensorMap& in, Defect defect) : p_(p), in_(in), defect_(defect) {
    if (p.kv_cache == KvCache::kList) {
      for (int64_t b = 0; b < p.batch; ++b) {
        for (const char* name : {"key", "value"}) {
          const auto it = in.find(fmt::format("{}.{}", name, b));
          (name[0] == 'k' ? list_keys_ : list_values_).push_back(it == in.end() ? nullptr : &it->second);
        }
      }
    } else {
      const auto k = in.find("key");
      const auto v = in.find("value");
      key_ = k == in.end() ? nullptr : &k->second;
      value_ = v == in.end() ? nullptr : &v->second;
    }
    const auto t = in.find("blocktable");
    if (ifa::is_paged(p) && t != in.end()) {
      table_.resize(static_cast<size_t>(t->second.numel()));
      for (int64_t i = 0; i < t->second.numel(); ++i) table_[static_cast<size_t>(i)] = static_cast<int64_t>(t->second.get(i));
    }
  }

  // The D values of (b, n2, t) of key or value as float; NaN when the address leaves the image.
  void row(const char* name, int64_t b, int64_t n2, int64_t t, float* dst) const {
    const Tensor* image = nullptr;
    const int64_t row = locate(name, b, n2, t, &image);
    const int64_t d = p_.head_dim;
    if (row < 0 || (row + 1) * d > image->numel()) {
      std::fill(dst, dst + d, NAN);
      return;
    }
    if (p_.kv_dtype == DType::kF16 || p_.kv_dtype == DType::kBF16) {  // exact either way, vectorised
      math::halves_to_float(reinterpret_cast<const uint16_t*>(image->data()) + row * d, d,
                            p_.kv_dtype == DType::kBF16, dst);
      return;
    }
    ifa::to_float(p_.kv_dtype, image->data(), row * d, d, dst);
  }

 private:
  const Tensor* image(const char* name, int64_t b) const {
    const bool key = name[0] == 'k';
    if (p_.kv_cache != KvCache::kList) return key ? key_ : value_;
    const auto& list = key ? list_keys_ : list_values_;
    return b < static_cast<int64_t>(list.size()) ? list[static_cast<size_t>(b)] : nullptr;
  }

  int64_t locate(const char* name, int64_t b, int64_t n2, int64_t t, const Tensor** out) const {
    const int64_t n2s = ifa::kv_heads(p_);
    const bool list = p_.kv_cache == KvCache::kList;
    *out = image(name, b);
    if (*out == nullptr) *out = list ? &in_.at(fmt::format("{}.{}", name, b)) : &in_.at(name);  // throws as before
    if (ifa::is_paged(p_)) {
      const int64_t bs = p_.block_size;
      const int64_t j = defect_ == Defect::kBlockIndexCeil ? (t + bs - 1) / bs : t / bs;
      if (j >= p_.max_block_num_per_seq) return -1;
      const int64_t blk = table_.at(static_cast<size_t>(b * p_.max_block_num_per_seq + j));
      if (blk < 0 || blk >= p_.block_num) return -1;
      const int64_t r = t % bs;
      return p_.kv_cache == KvCache::kPaged3d ? (blk * bs + r) * n2s + n2 : (blk * n2s + n2) * bs + r;
    }
    const int64_t bi = list ? 0 : b;
    const int64_t s = ifa::kv_tensor_len(p_, b);
    const bool bnsd = p_.input_layout == "BNSD" || defect_ == Defect::kBshReadAsBnsd;
    return bnsd ? (bi * n2s + n2) * s + t : (bi * s + t) * n2s + n2;
  }

  const Params& p_;
  const TensorMap& in_;
  Defect defect_;
  const Tensor* key_ = nullptr;
  const Tensor* value_ = nullptr;
  std::vector<const Tensor*> list_keys_, list_values_;
  std::vector<int64_t> table_;
};

// Small per-call tensors, converted once.
struct Inputs {
  std::vector<float> q, pse, aq_key_scale, aq_value_scale, aq_value_offset, qscale, qoffset;
  const uint8_t* mask = nullptr;
  std::vector<int64_t> lengths;
  float scale = 1;
};

std::vector<float> floats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  ifa::to_float(t.dtype(), t.data(), 0, t.numel(), v.data());
  return v;
}

// Per (n2, d) or per (n, d) channel values of a per-tensor (1 or 2 entries) or per-channel tensor.
std::vector<float> channels(const TensorMap& in, const char* name, bool per_tensor, int64_t count, int64_t part,
                            float absent) {
  std::vector<float> v(static_cast<size_t>(count), absent);
  const auto it = in.find(name);
  if (it == in.end()) return v;
  const std::vector<float> all = floats(it->second);
  for (int64_t c = 0; c < count; ++c) v[static_cast<size_t>(c)] = all[static_cast<size_t>(per_tensor ? part : part * count + c)];
  return v;
}

// One query head of the group being processed: its row, the MSD digits of A = q * sk (int8 KV),
// its online-softmax state in the current split (§1.4.3 steps 3-6) and the current tile's scores
// (then exp values, then P).
struct HeadState {
  int64_t n = 0;
  const float* q = nullptr;
  float amax = 0;
  std::vector<std::array<float, 3>> digits;
  float m = -INFINITY;
  float l = 0;
  std::vector<float> acc, s, part, chunk;
};

// A finished split: its max, row sum and normalised output.
struct SplitResult {
  float m = 0;
  float l = 0;
  std::vector<float> o;
};

class Kernel {
 public:
  Kernel(const Params& p, const TensorMap& in, Defect defect, Tensor& out, std::vector<ifa::KvWindow> windows)
      : p_(p), defect_(defect), kv_(p, in, defect), out_(out), sched_(schedule(p)), windows_(std::move(windows)) {
    const int64_t n2s = ifa::kv_heads(p);
    const int64_t hd = n2s * p.head_dim;
    const bool per_tensor_aq = p.antiquant == QuantMode::kPerTensor;
    x_.q = floats(in.at("query"));
    if (in.count("pseShift") != 0 && p.pse_seq > 0) x_.pse = floats(in.at("pseShift"));
    if (in.count("attenMask") != 0 && p.mask_seq > 0) x_.mask = in.at("attenMask").data();
    x_.aq_key_scale = channels(in, "antiquantScale", per_tensor_aq, hd, 0, 1.0f);
    x_.aq_value_scale = channels(in, "antiquantScale", per_tensor_aq, hd, 1, 1.0f);
    x_.aq_value_offset = channels(in, "antiquantOffset", per_tensor_aq, hd, 1, 0.0f);
    const int64_t nd = p.num_heads * p.head_dim;
    x_.qscale = channels(in, "quantScale2", p.quant == QuantMode::kPerTensor, nd, 0, 1.0f);
    x_.qoffset = channels(in, "quantOffset2", p.quant == QuantMode::kPerTensor, nd, 0, 0.0f);
    x_.lengths = ifa::effective_lengths(p);
    x_.scale = f32_from_double(p.scale_value);
    digits_ = p.inner_precise == 0 ? 3 : 2;
    // The all-vector template casts P with CAST_NONE (RNE), the C+V template with CAST_ROUND
    // (§1.4.3 step 4).
    p_rounding_ = kernel_template(p) == Template::kAllVector ? Rounding::kNearestEven : Rounding::kHalfAway;
  }

  void run_group(int64_t b, int64_t n2) const {
    const int64_t d = p_.head_dim;
    int64_t len = windows_[static_cast<size_t>(b)].length;
    if (len > 0 && defect_ == Defect::kActualLenPlusOne) ++len;
    // K and V rows as float, a piece of an S2 tile at a time (tile()).
    std::vector<float> k, v;
    std::vector<HeadState> heads = head_states(b, n2);
    std::vector<std::vector<SplitResult>> results(heads.size());
    const int64_t split = sched_.split_len > 0 ? sched_.split_len : len;
    for (int64_t s0 = 0; s0 < len; s0 += split) {
      const int64_t s1 = std::min(len, s0 + split);
      for (HeadState& h : heads) {
        h.m = -INFINITY;
        h.l = 0;
        h.acc.assign(static_cast<size_t>(d), 0.0f);
      }
      for (int64_t t0 = s0; t0 < s1; t0 += sched_.tile) {
        const int64_t t1 = std::min(s1, t0 + sched_.tile);
        tile(b, n2, t0, t1, heads, k, v);
      }
      for (size_t g = 0; g < heads.size(); ++g) {
        SplitResult r{heads[g].m, heads[g].l, heads[g].acc};
        for (float& a : r.o) a /= r.l;
        results[g].push_back(std::move(r));
      }
    }
    for (size_t g = 0; g < heads.size(); ++g) {
      std::vector<float> o(static_cast<size_t>(d), 0.0f);
      if (len > 0) o = finish(b, n2, len, results[g]);
      write(b, heads[g].n, n2, o);
    }
  }

 private:
  // Window position t of batch b: mask (and pse) at aux_start + t, KV rows at start + t.
  bool masked(int64_t b, int64_t t) const {
    const int64_t at = windows_[static_cast<size_t>(b)].aux_start + t;
    return x_.mask != nullptr && at >= 0 && at < p_.mask_seq && x_.mask[b * p_.mask_seq + at] != 0;
  }

  // The query heads that read KV head n2 (n2*G .. n2*G+G-1), with the int8 key-side digits.
  std::vector<HeadState> head_states(int64_t b, int64_t n2) const {
    const int64_t n2s = ifa::kv_heads(p_);
    const int64_t g = ifa::group_size(p_);
    const int64_t d = p_.head_dim;
    std::vector<HeadState> heads(static_cast<size_t>(g));
    for (int64_t i = 0; i < g; ++i) {
      HeadState& h = heads[static_cast<size_t>(i)];
      h.n = defect_ == Defect::kGqaModulo ? n2 + i * n2s : n2 * g + i;
      h.q = x_.q.data() + (b * p_.num_heads + h.n) * d;
      if (p_.kv_dtype != DType::kI8) continue;
      std::vector<float> a(static_cast<size_t>(d));
      for (int64_t j = 0; j < d; ++j) {
        a[static_cast<size_t>(j)] = h.q[j] * x_.aq_key_scale[static_cast<size_t>(n2 * d + j)];
        h.amax = std::max(h.amax, std::fabs(a[static_cast<size_t>(j)]));
      }
      h.digits.resize(static_cast<size_t>(d));
      for (int64_t j = 0; j < d; ++j) msd_digits(a[static_cast<size_t>(j)], h.amax, digits_, h.digits[static_cast<size_t>(j)]);
    }
    return heads;
  }

  // fp32 q.k (16 lanes over D, the cube's fractal width, then a pairwise tree), or for int8 KV the
  // exact int32 products of the MSD digits recombined in fp32 (§1.4.2).
  float dot(const HeadState& h, const float* kt) const {
    const int64_t d = p_.head_dim;
    if (p_.kv_dtype == DType::kI8) {
      if (std::isnan(kt[0])) return NAN;  // a read outside the KV image (defects only)
      std::array<float, 3> r{};
      for (int j = 0; j < digits_; ++j) {
        int64_t sum = 0;
        for (int64_t i = 0; i < d; ++i) {
          sum += static_cast<int64_t>(h.digits[static_cast<size_t>(i)][static_cast<size_t>(j)]) *
                 static_cast<int64_t>(kt[i]);
        }
        r[static_cast<size_t>(j)] = static_cast<float>(sum);
      }
      return msd_combine(r, digits_) * h.amax / 127.0f;
    }
    std::array<float, kCubeK> lane{};
    int64_t i = 0;
    for (; i + kCubeK <= d; i += kCubeK) {
      for (int64_t j = 0; j < kCubeK; ++j) lane[static_cast<size_t>(j)] += h.q[i + j] * kt[i + j];
    }
    for (; i < d; ++i) lane[static_cast<size_t>(i % kCubeK)] += h.q[i] * kt[i];
    for (size_t w = kCubeK / 2; w >= 1; w /= 2) {
      for (size_t j = 0; j < w; ++j) lane[j] += lane[j + w];
    }
    return lane[0];
  }

  // Rows [ta, tb) of key or value of (b, n2) as float into buf (row t at (t - ta) * d).
  void load_rows(const char* name, int64_t b, int64_t n2, int64_t ta, int64_t tb, std::vector<float>& buf) const {
    const int64_t d = p_.head_dim;
    buf.resize(static_cast<size_t>((tb - ta) * d));
    const int64_t start = windows_[static_cast<size_t>(b)].start;
    for (int64_t t = ta; t < tb; ++t) kv_.row(name, b, n2, start + t, buf.data() + (t - ta) * d);
  }

  // One S2 tile [t0, t1) of KV head n2 for every head of the group (§1.4.3 steps 1-5): scores (scale, pse, mask
  // select), online softmax update, P cast (or MSD digits) and the fp32 PV accumulation; k and v are
  // scratch for the K and V rows.
  void tile(int64_t b, int64_t n2, int64_t t0, int64_t t1, std::vector<HeadState>& heads, std::vector<float>& k,
            std::vector<float>& v) const {
    const int64_t d = p_.head_dim;
    const int64_t w = t1 - t0;
    const int64_t pb = p_.pse_batch == p_.batch ? b : 0;
    const int64_t aux = windows_[static_cast<size_t>(b)].aux_start;
    const bool half_acc = defect_ == Defect::kHalfPvAccumulation;
    // K and V are converted a piece of kPiece positions at a time (a multiple of kCubeK: PV
    // fractals stay whole), so they stay in cache; int8 KV and the fp16-accumulation defect take
    // the whole tile. The conversion is exact, so pieces do not change any value.
    const bool whole = p_.kv_dtype == DType::kI8 || half_acc;
    const int64_t piece = whole ? std::max<int64_t>(w, 1) : kPiece;
    for (HeadState& h : heads) h.s.resize(static_cast<size_t>(w));
    for (int64_t ta = t0; ta < t1; ta += piece) {
      const int64_t tb = std::min(t1, ta + piece);
      load_rows("key", b, n2, ta, tb, k);
      for (int64_t t = ta; t < tb; ++t) {
        const bool mask = masked(b, t);
        for (HeadState& h : heads) {
          // Reads past the pse row happen only under defects; they see 0 (kept in bounds).
          const float pse = aux + t >= 0 && aux + t < p_.pse_seq && !x_.pse.empty()
                                ? x_.pse[static_cast<size_t>((pb * p_.num_heads + h.n) * p_.pse_seq + aux + t)]
                                : 0.0f;
          const float qk = dot(h, k.data() + (t - ta) * d);
          float st = defect_ == Defect::kPseScaled ? (qk + pse) * x_.scale : qk * x_.scale + pse;
          if (mask) st = defect_ == Defect::kMaskAdded ? st + kMaskValue : kMaskValue;
          h.s[static_cast<size_t>(t - t0)] = st;
        }
      }
    }
    if (whole) load_rows("value", b, n2, t0, t1, v);
    for (HeadState& h : heads) {
      float m_new = h.m;
      for (float x : h.s) m_new = std::max(m_new, x);
      if (defect_ == Defect::kNoMaxSubtraction) m_new = 0;
      float rowsum = 0;
      for (float& x : h.s) {
        x = std::exp(x - m_new);
        rowsum += x;  // the unrounded fp32 e
      }
      float corr = 0.0f;  // the first tile finds acc = l = 0
      const bool no_rescale = defect_ == Defect::kNoMaxSubtraction || defect_ == Defect::kTileRescaleSkipped;
      if (h.m != -INFINITY) corr = no_rescale ? 1.0f : std::exp(h.m - m_new);
      h.l = (defect_ == Defect::kRowSumNotRescaled && h.m != -INFINITY ? h.l : h.l * corr) + rowsum;
      for (float& a : h.acc) a *= corr;
      h.m = m_new;
      h.part.assign(static_cast<size_t>(d), 0.0f);
      if (p_.kv_dtype == DType::kI8) {
        pv_int8(h, w, v);
      } else {
        const Rounding pr = defect_ == Defect::kPCastTruncates ? Rounding::kTowardZero : p_rounding_;
        for (float& x : h.s) x = detail::cast_p(x, p_.kv_dtype, pr);
      }
    }
    if (!whole) {
      for (int64_t ta = t0; ta < t1; ta += piece) {
        const int64_t tb = std::min(t1, ta + piece);
        load_rows("value", b, n2, ta, tb, v);
        for (HeadState& h : heads) pv_fp32(h, ta - t0, tb - ta, v.data());
      }
    } else if (p_.kv_dtype != DType::kI8) {  // the fp16-accumulation defect: every partial sum rounded
      for (int64_t c0 = 0; c0 < w; c0 += kCubeK) {
        for (HeadState& h : heads) h.chunk.assign(static_cast<size_t>(d), 0.0f);
        for (int64_t t = c0; t < std::min(w, c0 + kCubeK); ++t) {
          const float* vt = v.data() + t * d;
          for (HeadState& h : heads) {
            const float pv = h.s[static_cast<size_t>(t)];
            float* ch = h.chunk.data();
            for (int64_t i = 0; i < d; ++i) ch[i] += pv * vt[i];
            for (float& c : h.chunk) c = to_f16(c, Rounding::kNearestEven);
          }
        }
        for (HeadState& h : heads) {
          for (int64_t i = 0; i < d; ++i) {
            h.part[static_cast<size_t>(i)] += h.chunk[static_cast<size_t>(i)];
            h.part[static_cast<size_t>(i)] = to_f16(h.part[static_cast<size_t>(i)], Rounding::kNearestEven);
          }
        }
      }
    }
    for (HeadState& h : heads) {
      for (int64_t i = 0; i < d; ++i) {
        float& a = h.acc[static_cast<size_t>(i)];
        a += h.part[static_cast<size_t>(i)];
        if (half_acc) a = to_f16(a, Rounding::kNearestEven);
      }
    }
  }

  // fp32 PV of one head over tile positions [first, first + count) (rows: their V rows; first is a
  // multiple of kCubeK): per fractal of kCubeK positions, each
  // element c[i] = ((0 + p_0 v_0[i]) + p_1 v_1[i]) + ..., then part[i] += c[i]; the same operations
  // as the step-by-step loop of tile(), with blocks of columns held in registers across positions.
  void pv_fp32(HeadState& h, int64_t first, int64_t count, const float* rows) const {
    constexpr int64_t kCols = 32;
    const int64_t d = p_.head_dim;
    float* part = h.part.data();
    for (int64_t c0 = first; c0 < first + count; c0 += kCubeK) {
      const int64_t c1 = std::min(first + count, c0 + kCubeK);
      int64_t i0 = 0;
      for (; i0 + kCols <= d; i0 += kCols) {
        float c[kCols] = {};
        for (int64_t t = c0; t < c1; ++t) {
          const float pv = h.s[static_cast<size_t>(t)];
          const float* vt = rows + (t - first) * d + i0;
          for (int64_t i = 0; i < kCols; ++i) c[i] += pv * vt[i];
        }
        for (int64_t i = 0; i < kCols; ++i) part[i0 + i] += c[i];
      }
      for (int64_t i = i0; i < d; ++i) {
        float c = 0.0f;
        for (int64_t t = c0; t < c1; ++t) c += h.s[static_cast<size_t>(t)] * rows[(t - first) * d + i];
        part[i] += c;
      }
    }
  }

  // int8 KV (v: the tile's rows from t0): P (fp32 e <= 1) as MSD digits with amax 1, int8 x int8 on the cube per digit, then
  // recombined in fp32 (§1.4.2).
  void pv_int8(HeadState& h, int64_t w, const std::vector<float>& v) const {
    const int64_t d = p_.head_dim;
    std::vector<std::array<float, 3>> dig(static_cast<size_t>(w));
    for (int64_t t = 0; t < w; ++t) msd_digits(h.s[static_cast<size_t>(t)], 1.0f, digits_, dig[static_cast<size_t>(t)]);
    std::vector<double> sums(static_cast<size_t>(3 * d), 0.0);  // exact integers; NaN rows stay NaN
    for (int64_t t = 0; t < w; ++t) {
      const float* vt = v.data() + t * d;
      for (int j = 0; j < digits_; ++j) {
        const double digit = dig[static_cast<size_t>(t)][static_cast<size_t>(j)];
        double* row = sums.data() + j * d;
        for (int64_t i = 0; i < d; ++i) row[i] += digit * static_cast<double>(vt[i]);
      }
    }
    for (int64_t i = 0; i < d; ++i) {
      const std::array<float, 3> r{static_cast<float>(sums[static_cast<size_t>(i)]),
                                   static_cast<float>(sums[static_cast<size_t>(d + i)]),
                                   static_cast<float>(sums[static_cast<size_t>(2 * d + i)])};
      h.part[static_cast<size_t>(i)] = msd_combine(r, digits_) / 127.0f;
    }
  }

  // Flash-decode combine (§1.4.3 step 6), int8 value dequantisation (§1.4.2) of one head.
  std::vector<float> finish(int64_t b, int64_t n2, int64_t len, const std::vector<SplitResult>& parts) const {
    const int64_t d = p_.head_dim;
    std::vector<float> o = parts[0].o;
    if (parts.size() > 1) {
      float m = defect_ == Defect::kCombineMaxFromZero ? 0.0f : -INFINITY;
      for (const auto& st : parts) m = std::max(m, st.m);
      std::vector<float> w;
      float total = 0;
      for (const auto& st : parts) {
        w.push_back(defect_ == Defect::kUnweightedCombine ? st.l : st.l * std::exp(st.m - m));
        if (defect_ == Defect::kMaskedSplitSkipped && st.m == kMaskValue) w.back() = 0.0f;
        total += w.back();
      }
      std::fill(o.begin(), o.end(), 0.0f);
      for (size_t j = 0; j < parts.size(); ++j) {
        const float wj = w[j] / total;
        for (int64_t i = 0; i < d; ++i) o[static_cast<size_t>(i)] += wj * parts[j].o[static_cast<size_t>(i)];
      }
    }
    if (p_.kv_dtype == DType::kI8) {
      for (int64_t i = 0; i < d; ++i) {
        const auto c = static_cast<size_t>(n2 * d + i);
        const float off = defect_ == Defect::kValueOffsetIgnored ? 0.0f : x_.aq_value_offset[c];
        o[static_cast<size_t>(i)] = (o[static_cast<size_t>(i)] + off) * x_.aq_value_scale[c];
      }
    }
    if (defect_ == Defect::kFullyMaskedZero && x_.mask != nullptr) {
      bool all = true;
      for (int64_t t = 0; t < len && all; ++t) all = masked(b, t);
      if (all) std::fill(o.begin(), o.end(), 0.0f);
    }
    return o;
  }

  // Output cast (§1.4.4) or quantisation (§1.4.5) of one head's row.
  void write(int64_t b, int64_t n, int64_t n2, const std::vector<float>& o) const {
    const int64_t d = p_.head_dim;
    for (int64_t i = 0; i < d; ++i) {
      const int64_t flat = (b * p_.num_heads + n) * d + i;
      const float x = o[static_cast<size_t>(i)];
      if (p_.out_dtype == DType::kF16) {
        out_.set(flat, x, Rounding::kHalfAway);
      } else if (p_.out_dtype == DType::kBF16) {
        out_.set(flat, x, Rounding::kNearestEven);
      } else {
        const int64_t head = defect_ == Defect::kQuantScaleKvHead ? n2 : n;
        const auto c = static_cast<size_t>(p_.quant == QuantMode::kPerTensor ? 0 : head * d + i);
        const float s = x_.qscale[c];
        const float off = x_.qoffset[c];
        float y;
        if (p_.quant == QuantMode::kPerTensor) {
          // AscendQuant on A2 computes in half (§1.4.5).
          float h = to_f16(x, Rounding::kNearestEven);
          h = to_f16(h * to_f16(s, Rounding::kNearestEven), Rounding::kNearestEven);
          h = to_f16(h + to_f16(off, Rounding::kNearestEven), Rounding::kNearestEven);
          y = std::clamp(std::nearbyint(h), -128.0f, 127.0f);
        } else {
          y = i8a(to_f16(x * s + off, Rounding::kHalfAway));
        }
        out_.set(flat, std::isnan(y) ? 0.0 : y);
      }
    }
  }

  const Params& p_;
  Defect defect_;
  KvSource kv_;
  Tensor& out_;
  Schedule sched_;
  std::vector<ifa::KvWindow> windows_;
  Inputs x_;
  int digits_ = 2;
  Rounding p_rounding_ = Rounding::kHalfAway;
};

}  // namespace

Template kernel_template(const Params& p) {
  // EnableAllVec: fp16 query, KV and output (KV fp16 implies the query), no page attention, G == 1
  // (D <= 512 always holds, V13). Checked before the cube-view template, which the emulator runs as
  // C+V (runs_cube_view()).
  const bool all_vec = p.kv_dtype == DType::kF16 && p.out_dtype == DType::kF16 && !ifa::is_paged(p) &&
                       ifa::group_size(p) == 1;
  return all_vec ? Template::kAllVector : Template::kCubeVector;
}

bool runs_cube_view(const Params& p) {
  // EnableCubeViewMM: G <= 16, D = 128 (CheckConstraints), innerPrecise 1 (CheckDataCopyNd2Nz),
  // B·N2·⌈max L / 2048⌉ > 128, page attention with a BNSD query, KV of the query's dtype or int8
  // (the kernel wants per-channel antiquant; any int8 KV counts here, erring towards reporting).
  if (kernel_template(p) == Template::kAllVector) return false;
  const int64_t s2_loops = (ifa::longest_effective_length(p) + 2047) / 2048;
  return ifa::group_size(p) <= 16 && p.head_dim == 128 && p.inner_precise == 1 &&
         p.batch * ifa::kv_heads(p) * s2_loops > 128 && ifa::is_paged(p) && p.input_layout == "BNSD";
}

Schedule schedule(const Params& p) { return schedule(p, soc()); }

Schedule schedule(const Params& p, const Soc& chip) {
  const int64_t g = ifa::group_size(p);
  const bool antiquant = p.kv_dtype == DType::kI8;
  int64_t tile = antiquant ? (g > 1 ? 1024 : 8192) : (g < 5 ? 8192 : (g < 10 ? 4096 : 2048));
  const bool paged = ifa::is_paged(p);
  if (paged) tile = std::max(p.block_size, tile / p.block_size * p.block_size);
  const int64_t max_len = ifa::longest_effective_length(p);
  const int64_t bn = p.batch * ifa::kv_heads(p);
  const Template kernel = kernel_template(p);
  int64_t tenths = 0;
  for (const SplitRule& r : kSplitRules) {
    if (r.kernel == kernel) tenths = r.tenths;
  }
  Schedule s;
  s.kernel = kernel;
  s.tile = tile;
  const bool cores_ok = 10 * bn < tenths * chip.aiv;
  const bool flash = cores_ok && (g == 1 || max_len >= 2048) && !(paged && max_len <= 1024);
  if (!flash || bn == 0) return s;
  int64_t parts = chip.aiv / bn;
  while (parts > 1 && max_len / parts < 512) --parts;
  if (parts <= 1) return s;
  // SplitBNS: ceil(maxActualSeq / parts), aligned up to blockSize with page attention.
  int64_t len = (max_len + parts - 1) / parts;
  if (paged) len = (len + p.block_size - 1) / p.block_size * p.block_size;
  s.split_len = len;
  s.parts = (max_len + len - 1) / len;
  return s;
}

std::vector<DefectInfo> defects() {
  return defect_infos(kDefects);
}

Status run(const Params& p, const TensorMap& in, TensorMap& out, const std::string& defect_name) {
  return run_window(p, in, out, defect_name, ifa::full_windows(p));
}

Status run_window(const Params& p, const TensorMap& in, TensorMap& out, const std::string& defect_name,
                  const std::vector<ifa::KvWindow>& windows) {
  if (static_cast<int64_t>(windows.size()) != p.batch) {
    return internal_error("emu incre_flash_attention_v3: run_window needs one KV window per batch");
  }
  OPGATE_ASSIGN_OR_RETURN(const Defect defect, parse_defect(defect_name));
  const auto it = out.find("attentionOut");
  if (it == out.end() || it->second.numel() != p.batch * p.num_heads * p.head_dim) {
    return internal_error("emu incre_flash_attention_v3: attentionOut buffer missing or of the wrong size");
  }
  const Kernel kernel(p, in, defect, it->second, windows);
  const int64_t n2s = ifa::kv_heads(p);
  math::parallel_for(p.batch * n2s, [&](int64_t job) { kernel.run_group(job / n2s, job % n2s); });
  return Status::ok();
}

}  // namespace opgate::emu::incre_flash_attention_v3
