// Device memory images of aclnnFfnWorkerBatching (spec routing-ops.md §1.2, §1.3): the packed
// 1024-byte ScheduleContext, the token_data_buf slots, and the buffer handles a backend binds into
// the context's device-pointer fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "reference/ffn_worker_batching.h"

namespace opgate::layout::ffn_worker_batching {

using Params = ref::ffn_worker_batching::Params;

constexpr int64_t kContextBytes = 1024;

// Every named field of the ScheduleContext as a zero-extended little-endian value (i32 fields hold
// their 32-bit pattern). Member order follows attention_ffn_schedule.h.
struct ScheduleContext {
  uint64_t session_num = 0, micro_batch_num = 0, micro_batch_size = 0, selected_expert_num = 0;
  uint64_t expert_num = 0, attn_to_ffn_token_size = 0, ffn_to_attn_token_size = 0, schedule_mode = 0;
  uint64_t run_flag = 0;
  uint64_t attn_token_info_buf = 0, attn_token_info_buf_size = 0, attn_token_data_buf = 0;
  uint64_t attn_token_data_buf_size = 0, attn_micro_batch_id = 0;
  uint64_t token_info_buf = 0, token_info_buf_size = 0, token_data_buf = 0, token_data_buf_size = 0;
  uint64_t polling_index = 0, layer_ids_buf = 0, layer_ids_buf_size = 0, session_ids_buf = 0;
  uint64_t session_ids_buf_size = 0, micro_batch_ids_buf = 0, micro_batch_ids_buf_size = 0;
  uint64_t expert_ids_buf = 0, expert_ids_buf_size = 0, out_num = 0;
  bool operator==(const ScheduleContext& o) const;
};

// One field: its name in the C struct, byte offset, width (4 or 8) and whether it is a device
// address (then it is bound per backend and is not data).
struct ContextField {
  const char* name;
  uint64_t ScheduleContext::*member;
  int64_t offset;
  int64_t bytes;
  bool device_pointer;
};
const std::vector<ContextField>& context_fields();
// The field covering byte `offset`, or nullptr for reserved bytes.
const ContextField* field_at(int64_t offset);

// The 1024-byte image (int8): every field at its offset, reserved bytes poisoned (0xCD).
Tensor build_context(const ScheduleContext& c);
// Reads every field back from an image of at least 1024 bytes.
ScheduleContext parse_context(const Tensor& image);
// The context a case describes: dimensions, sizes of the buffers it holds, device pointers 0.
ScheduleContext context_of(const Params& p);

// Buffers the FFN area points to. On emu a device pointer is a handle naming the buffer:
// handle = 1 + index in this list (0 = null). The ascend backend binds real addresses instead.
const std::vector<std::string>& buffer_names();
uint64_t handle_of(const std::string& buffer);
// The buffer a handle names, or "" if none.
std::string buffer_of(uint64_t handle);
// Sets ffn.token_info_buf, token_data_buf, session_ids_buf, micro_batch_ids_buf and
// expert_ids_buf of `image` to the handles of the buffers present in `buffers`.
void bind_handles(Tensor& image, const TensorMap& buffers);
// Zeroes every device-pointer field (the canonical form: addresses are not data).
void clear_pointers(Tensor& image);

// Byte offset of token slot (s, m, bs, k) in token_data_buf, as AttentionToFFN writes it:
// ((s*M + m)*BS + bs)*K*HS + k*HS.
int64_t slot_offset(const Params& p, int64_t s, int64_t m, int64_t bs, int64_t k);
// tokens (+ tokenScales) -> token_data_buf (uint8, A*M*BS*K*HS bytes): payload at byte 0 of each
// slot, the int8 path's fp32 scale at byte H, the rest of the slot poisoned.
Tensor pack_token_data(const Params& p, const Tensor& tokens, const Tensor* scales);
// token_data_buf -> tokens and (tokenDtype 2) tokenScales.
TensorMap parse_token_data(const Params& p, const Tensor& data);

// Canonical inputs (ref::input_specs) -> the images of the call: scheduleContext (pointers 0, as
// golden files store it), tokenInfoBuf, tokenDataBuf and, in NORM mode, sessionIdsBuf,
// microBatchIdsBuf, expertIdsBuf.
TensorMap pack(const Params& p, const TensorMap& canonical);
// The output buffers: the eight aclnn outputs per `specs`, plus in RECV mode scheduleContext and
// tokenInfoBuf, which the kernel updates in place (the backend copies the input image there first).
SpecMap output_images(const Params& p, const SpecMap& specs);
// Output images -> canonical outputs: scheduleContext with its device pointers cleared.
TensorMap unpack(const Params& p, const TensorMap& images);

}  // namespace opgate::layout::ffn_worker_batching
