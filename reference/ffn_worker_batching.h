// Reference of aclnnFfnWorkerBatching (spec routing-ops.md §1): the NORM and RECV batching of
// routed tokens into expert order, on a canonical token list rather than the packed byte buffers,
// with the validation of §1.7 and the data preconditions of §1.4.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/reference_outputs.h"
#include "core/status.h"
#include "core/tensor.h"

namespace opgate::ref::ffn_worker_batching {

// Bumped whenever the reference's semantics change on purpose (golden-format.md).
constexpr int kReferenceVersion = 1;

// An expert id at or above this value is masked (ffn_wb_sort_base.h expertStart_, spec §1.4).
constexpr int64_t kMaskThreshold = 1000000;
// The masked values callers write: FfnWorkerScheduler's 0x7F bytes and the RECV reset value.
constexpr int32_t kMaskScheduler = 0x7F7F7F7F;
constexpr int32_t kMaskReset = INT32_MAX;
// Byte offset of ffn.polling_index (u64) in the ScheduleContext, the one field the kernel writes.
constexpr int64_t kPollingIndexOffset = 416;

// Problem descriptor: the aclnn attributes verbatim plus the ScheduleContext values the kernel
// reads. The context's session_num, micro_batch_size and selected_expert_num equal maxOutShape's
// A, BS and K (spec §1.5.1 requirement).
struct Params {
  int64_t expert_num = 1;                       // expertNum: rows of groupList
  std::vector<int64_t> max_out_shape{1, 1, 1, 1};  // maxOutShape {A, BS, K, H}
  int64_t token_dtype = 0;                      // 0 fp16, 1 bf16, 2 int8 + fp32 scale
  int64_t need_schedule = 0;                    // 0 NORM, 1 RECV
  int64_t layer_num = 0;                        // range-checked only
  int64_t micro_batch_num = 1;                  // context M
  int64_t token_size = 2;                       // context attn_to_ffn_token_size: HS bytes per slot
  int64_t out_num = 0;                          // context ffn.out_num (NORM)
  int64_t polling_index = 0;                    // context ffn.polling_index (RECV)
  bool operator==(const Params& o) const;
};

// maxOutShape entries; 0 for an entry the (invalid) attribute lacks.
struct Dims {
  int64_t a = 0, bs = 0, k = 0, h = 0;
};
Dims dims(const Params& p);
bool is_recv(const Params& p);
// Y = A * BS * K (saturating), the row count of y and of the id outputs.
int64_t out_rows(const Params& p);
// Words of one token_info descriptor: flag, layer_id, BS*K expert ids.
int64_t descriptor_words(const Params& p);
// dtype of y and of the canonical token payload (int8 for tokenDtype 2); fp16 when out of range.
DType token_element(const Params& p);
// Bytes a slot must hold: 2H (fp16/bf16) or H + 4 (int8 payload then the fp32 scale at byte H).
int64_t payload_bytes(const Params& p);

// The aclnn outputs in call order: y, groupList, sessionIds, microBatchIds, tokenIds,
// expertOffsets, dynamicScale, actualTokenNum.
const std::vector<std::string>& output_names();

// Descriptors of the aclnn call: scheduleContext (int8 [1024]) and the outputs y (Y, H),
// groupList (expertNum, 2), sessionIds, microBatchIds, tokenIds, expertOffsets, dynamicScale (Y),
// actualTokenNum (1).
SpecMap specs(const Params& p);

// Canonical inputs (what `reference` reads), with their shapes:
//   scheduleContext  int8  [1024]        the packed context, device pointers 0
//   tokenInfoBuf     int32 [A*M*F]       F = 2 + BS*K: flag, layer_id, ids per (session, micro batch)
//   tokens           y's dtype [A, M, BS, K, H]  the payload of every token slot
//   tokenScales      fp32 [A, M, BS, K]  the dynamic scale of every slot (tokenDtype 2 only)
//   sessionIdsBuf, microBatchIdsBuf  int32 [A];  expertIdsBuf  int32 [A*BS*K]   (NORM only)
SpecMap input_specs(const Params& p);

// The checks of the aclnn layer (161001 null, 161002 dtype) and of tiling (assumed 561002, spec
// §1.9 q1) in that order; then the requirements the host does not check but the kernel needs
// (context M in [1, 64], HS >= payload, out_num <= A, polling_index < M, outputs shaped as specs)
// as kInvalidCase.
Status validate(const Params& p, const SpecMap& specs);

// Data the kernel's result is undefined for (kInvalidCase): expert ids (NORM rows < out_num, RECV
// column polling_index) that are negative or in [expertNum, 1e6); NORM session / micro batch ids
// outside [0, A) / [0, M); a RECV flag at polling_index that is not 1 (the kernel would spin
// forever); more than 1024 distinct experts in RECV (the scan lister's buffer). Also checks that
// `inputs` match input_specs(p).
Status check_data(const Params& p, const TensorMap& inputs);

// One output row: the flattened position f of its entry and where its token lives.
struct Entry {
  int64_t position = 0;  // f = a*BS*K + bs*K + k (NORM slot a; RECV session a)
  int32_t expert = 0;
  int64_t session = 0, micro_batch = 0, token = 0, slot = 0;  // s, m, bs, k
};

// The valid entries (id < 1e6) in output order: ascending expert id, ties by ascending f.
std::vector<Entry> batch_order(const Params& p, const TensorMap& inputs);

// Expected outputs for valid inputs:
//   NORM: keys = expertIdsBuf[0 .. out_num*BS*K); (s, m) of slot a = (sessionIdsBuf[a], microBatchIdsBuf[a])
//   RECV: keys = tokenInfoBuf[s][p][2 .. 2+BS*K); (s, m) = (s, p)
//   order = stable ascending sort of the keys < 1e6;  actual = |order|
//   y[i] = tokens[s][m][bs][k] (bits); dynamicScale[i] = tokenScales[s][m][bs][k] (bits)
//   sessionIds, microBatchIds, tokenIds, expertOffsets [i] = s, m, bs, k
//   groupList = [u_j, c_j] for the distinct ids u_j ascending, then [0, 0] if fewer than expertNum
//   RECV: ctx.polling_index = (p+1) % M; tokenInfoBuf[*][p]: flag 0, ids INT32_MAX
// care: rows >= actual, groupList rows after the terminator, dynamicScale unless tokenDtype 2, and
// NORM's groupList[0][0] when actual = 0 are 0; those elements hold all-ones bits.
// Precondition: validate(p, specs(p)) and check_data(p, inputs) are ok.
RefOutputs reference(const Params& p, const TensorMap& inputs);

}  // namespace opgate::ref::ffn_worker_batching
