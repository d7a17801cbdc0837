// Hand-built FfnWorkerBatching inputs shared by the reference and emu tests: the spec's tiny NORM
// vector (routing-ops.md §1.6) and a small RECV poll, with token payloads that name their slot.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "reference/ffn_worker_batching.h"

namespace opgate::ffn_worker_batching_testing {

using ref::ffn_worker_batching::descriptor_words;
using ref::ffn_worker_batching::Dims;
using ref::ffn_worker_batching::dims;
using ref::ffn_worker_batching::input_specs;
using ref::ffn_worker_batching::is_recv;
using ref::ffn_worker_batching::Params;

// Payload of token slot (s, m, bs, k): the fp16 integer s*100 + m*1000 + bs*10 + k, so a y row
// says where it came from.
inline double slot_value(int64_t s, int64_t m, int64_t bs, int64_t k) {
  return static_cast<double>(s * 100 + m * 1000 + bs * 10 + k);
}

// Canonical inputs for `p` (fp16, H = 1) with the given routing words; tokens named by slot_value.
inline TensorMap make_inputs(const Params& p, const std::vector<double>& token_info,
                             const std::vector<double>& sessions, const std::vector<double>& micro_batches,
                             const std::vector<double>& expert_ids) {
  const SpecMap s = input_specs(p);
  TensorMap in;
  in["scheduleContext"] = Tensor::zeros(DType::kI8, {1024});
  in["tokenInfoBuf"] = Tensor::from_values(DType::kI32, s.at("tokenInfoBuf").shape, token_info);
  Tensor tokens = Tensor::zeros(DType::kF16, s.at("tokens").shape);
  const Dims d = dims(p);
  for (int64_t t = 0; t < tokens.numel(); ++t) {
    const int64_t k = t % d.k, bs = t / d.k % d.bs, m = t / (d.k * d.bs) % p.micro_batch_num;
    tokens.set(t, slot_value(t / (d.k * d.bs * p.micro_batch_num), m, bs, k));
  }
  in["tokens"] = tokens;
  if (!is_recv(p)) {
    in["sessionIdsBuf"] = Tensor::from_values(DType::kI32, s.at("sessionIdsBuf").shape, sessions);
    in["microBatchIdsBuf"] = Tensor::from_values(DType::kI32, s.at("microBatchIdsBuf").shape, micro_batches);
    in["expertIdsBuf"] = Tensor::from_values(DType::kI32, s.at("expertIdsBuf").shape, expert_ids);
  }
  return in;
}

constexpr double kMask = 2139062143;  // 0x7F7F7F7F

// Spec §1.6: K = 2, BS = 2, out_num = 2, expertNum = 4; session_ids_buf = [3, 1] (so A = 4).
inline Params norm_params() {
  Params p;
  p.expert_num = 4;
  p.max_out_shape = {4, 2, 2, 1};
  p.token_size = 2;
  p.out_num = 2;
  return p;
}

inline TensorMap norm_inputs() {
  const Params p = norm_params();
  std::vector<double> info(static_cast<size_t>(4 * descriptor_words(p)), kMask);
  for (int64_t s = 0; s < 4; ++s) info[static_cast<size_t>(s * descriptor_words(p))] = 0;  // flags
  // Slots 2 and 3 lie beyond out_num: stale but well-formed.
  return make_inputs(p, info, {3, 1, 0, 2}, {0, 0, 0, 0},
                     {2, 0, 1, 2, 0, kMask, 3, 2, /* stale */ 1, 1, 1, 1, 0, 0, 0, 0});
}

// RECV: A = 2, M = 2, BS = 1, K = 3 (rows padded from 3 to 8 ids), polling index 1, expertNum 6.
// Descriptor (s, m) words: flag, layer_id, 3 ids.
inline Params recv_params() {
  Params p;
  p.expert_num = 6;
  p.max_out_shape = {2, 1, 3, 1};
  p.need_schedule = 1;
  p.micro_batch_num = 2;
  p.polling_index = 1;
  p.token_size = 2;
  return p;
}

inline TensorMap recv_inputs() {
  return make_inputs(recv_params(),
                     {/* s0 m0 */ 0, 7, 4, 4, 4, /* s0 m1 */ 1, 7, 5, 2147483647, 1,
                      /* s1 m0 */ 1, 8, 3, 3, 3, /* s1 m1 */ 1, 8, 1, 0, 1000000},
                     {}, {}, {});
}

}  // namespace opgate::ffn_worker_batching_testing
