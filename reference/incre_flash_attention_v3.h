// Double-precision reference of aclnnIncreFlashAttentionV3 (spec attention-and-ffn.md §1.4.1,
// antiquant §1.4.2, output quantisation §1.4.5, edge cases §1.5) with the validation rules V1-V25
// of §1.6 and the first-order error budget of a kernel that follows §1.4.3.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/reference_outputs.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate::ref::incre_flash_attention_v3 {

// Bumped whenever the reference's semantics change on purpose (golden-format.md).
constexpr int kReferenceVersion = 3;

// The attentionOut bound's factor over the first-order budget the magnitude holds (compare_plan's
// tol.c): it covers second-order products of roundings and an Exp up to twice as inaccurate as
// assumed. The int8 output's saturation (write_output) is decided with the same bound.
constexpr double kBudgetFactor = 2;

// How key/value reach the kernel (§1.2, §1.3): one tensor of batch B, a list of B tensors with
// their own S, or a page-attention cache (blocknum, blockSize, H2) / (blocknum, N2, blockSize, D).
enum class KvCache { kTensor, kList, kPaged3d, kPaged4d };
// KV antiquant (int8 KV, §1.4.2) and output quantisation (int8 attentionOut, §1.4.5).
enum class QuantMode { kNone, kPerTensor, kPerChannel };

// Problem descriptor: the aclnn attributes plus the dimensions and presence of every argument.
struct Params {
  DType dtype = DType::kF16;      // query and pseShift
  DType kv_dtype = DType::kF16;   // key and value
  DType out_dtype = DType::kF16;  // attentionOut
  int64_t batch = 1;              // B
  int64_t num_heads = 1;          // N (numHeads)
  int64_t num_key_value_heads = 0;  // 0 means N
  int64_t head_dim = 16;          // D
  int64_t seq = 16;               // S of the single key tensor (kTensor)
  std::string input_layout = "BSH";
  double scale_value = 1.0;
  int64_t inner_precise = 1;
  KvCache kv_cache = KvCache::kTensor;
  std::vector<int64_t> kv_seq_lens;  // kList: S_b of each list tensor (the list length)
  bool has_actual_seq_lengths = false;
  std::vector<int64_t> actual_seq_lengths;
  int64_t block_size = 0;             // page attention
  int64_t max_block_num_per_seq = 0;  // blocktable dim 1
  int64_t block_num = 0;              // cache blocks
  bool has_pse = false;
  int64_t pse_batch = 1;  // pseShift dim 0: 1 or B
  int64_t pse_seq = 0;    // pseShift last dim
  bool has_mask = false;
  DType mask_dtype = DType::kBool;
  int64_t mask_rank = 4;  // (B,S), (B,1,S) or (B,1,1,S)
  int64_t mask_seq = 0;   // attenMask last dim
  QuantMode antiquant = QuantMode::kNone;
  bool has_antiquant_offset = false;
  std::string antiquant_shape;  // "2N1D", "21ND", "2ND", "2H" (per channel) or "2" (per tensor)
  QuantMode quant = QuantMode::kNone;
  bool has_quant_offset = false;
  DType quant_dtype = DType::kF32;
  std::string quant_shape;  // "1N1D", "N1D", "ND", "11ND", "1ND", "1H", "11H", "H" or "1"
  bool operator==(const Params& o) const;
};

bool is_paged(const Params& p);
// N2 (numKeyValueHeads, 0 -> N) and G = N / N2.
int64_t kv_heads(const Params& p);
int64_t group_size(const Params& p);
// Length of the canonical KV axis: S, max S_b (list) or maxBlockNumPerSeq * blockSize (paged).
int64_t kv_capacity(const Params& p);
// S_b: the key tensor length of batch b (kv_capacity for paged caches).
int64_t kv_tensor_len(const Params& p, int64_t b);
// L_b per §1.3: actualSeqLengths absent/empty -> S_b; one value -> broadcast; else asl[b].
std::vector<int64_t> effective_lengths(const Params& p);
// max_b L_b (0 for no batch): the length the flash-decode split and the accumulation count use.
int64_t longest_effective_length(const Params& p);

// Descriptors of the aclnn call as the device receives it (layout shapes, key.<i>/value.<i> for a
// tensor list, caches for page attention); absent optionals have present = false.
SpecMap specs(const Params& p);
// Canonical inputs that fill produces and reference consumes: query (B,N,1,D); key, value
// (B,N2,kv_capacity,D); pseShift as specs; attenMask (B, maskS); antiquantScale/Offset (2, N2*D)
// or (2); quantScale2/Offset2 (N*D) or (1); blocktable as specs. Absent optionals are absent.
SpecMap canonical_specs(const Params& p);

// The documented checks V1-V25 (§1.6) on the attributes and descriptors, in the order of the
// aclnn layer (161001, 161002) and then tiling (561002). Ok or kAclnnError quoting the rule.
Status validate(const Params& p, const SpecMap& specs);

// Data conditions the kernel relies on: canonical inputs matching canonical_specs(p) and every
// block-table entry that is read (blocks 0 .. ceil(L_b/blockSize)-1) in [0, blockNum).
Status check_data(const Params& p, const TensorMap& inputs);

// Expected attentionOut (shape of the query's layout, f64) and, as magnitude, the first-order error
// budget of a kernel following §1.4.3 in units of 2^-24: score, exp and rescale roundings through
// the softmax conditioning sum_t w_t |v_t - o| delta_t, the P cast (fp16/bf16) or MSD digits (int8)
// and fp32 PV / row-sum accumulation times sum_t w_t |v_t|, and the flushed tail of tiny P (int8
// outputs: of o*s + off, including the quantisation arithmetic; README "Checks"):
//   n2 = n / G; L = L_b; L = 0 -> o = 0
//   s_t = fp32(scaleValue) * sum_d q_d kdq_td + pse[b|0, n, t];  mask[b, t] != 0 -> s_t = -1e12
//   p_t = exp(s_t - max_t s_t); l = sum_t p_t; o_d = sum_t p_t vdq_td / l
//   kdq = (k + off_k) * sc_k, vdq = (v + off_v) * sc_v (int8 KV; per channel index n2*D + d)
//   fp16/bf16 out: o;  int8 out: clamp(o_d * s_c + off_c, -128, 127), c = n*D + d (query head)
// Precondition: validate(p, specs(p)) and check_data(p, inputs) are ok.
RefOutputs reference(const Params& p, const TensorMap& inputs);

// The KV positions batch b attends to: [start, start + length) of its canonical KV axis, with
// attenMask and pseShift read at the same positions (aux_start = start; it differs only in the
// defects of operators that shift the window). V3's windows are {0, L_b} (§1.3: no left padding);
// aclnnIncreFlashAttentionV4 shifts them by kvPaddingSize (cases/incre_flash_attention_v4/README.md).
struct KvWindow {
  int64_t start = 0;
  int64_t length = 0;
  int64_t aux_start = 0;
};
// {0, L_b, 0} for every batch: the windows of reference().
std::vector<KvWindow> full_windows(const Params& p);
// reference() over the given windows (one per batch, inside the canonical KV axis; a window of
// length 0 gives the L = 0 row of §1.5 E1). reference(p, in) == reference_window(p, in, full_windows(p)).
RefOutputs reference_window(const Params& p, const TensorMap& inputs, const std::vector<KvWindow>& windows);

}  // namespace opgate::ref::incre_flash_attention_v3
