// Marshalling of aclnnFfnWorkerBatching: the ScheduleContext travels as an INT8 (1024) tensor whose
// FFN-area pointer fields must hold real device addresses of the side buffers (token_info_buf,
// token_data_buf, session/micro-batch/expert id buffers; routing-ops.md §1.2, §1.3). The packed
// context has those fields zero; they are patched with the addresses of the uploaded buffers before
// the context itself is uploaded. In RECV mode the context and tokenInfoBuf are output images (the
// kernel updates them in place), so their device contents are copied back like every output.
#include "device/ascend/ffn_worker_batching.h"

#include <string>

#include "device/ascend/ascend_call.h"
#include "device/layout/ffn_worker_batching.h"
#include "reference/ffn_worker_batching.h"

namespace opgate::ascend::ffn_worker_batching {
namespace {

using Params = ref::ffn_worker_batching::Params;
namespace fwb_layout = layout::ffn_worker_batching;

Support supports(const Problem& /*problem*/, const SocInfo& soc, const std::string& /*entry*/) {
  return documented_support(soc, {SocFamily::kA2, SocFamily::kA3, SocFamily::kAscend950},
                            "the aclnnFfnWorkerBatching documentation (seed 000, ascend-abi.md §5.1)");
}

uint64_t read_u64(const Tensor& t, int64_t offset, int64_t bytes) {
  uint64_t v = 0;
  for (int64_t b = 0; b < bytes; ++b) v |= static_cast<uint64_t>(t.data()[offset + b]) << (8 * b);
  return v;
}

void write_u64(Tensor& t, int64_t offset, int64_t bytes, uint64_t v) {
  for (int64_t b = 0; b < bytes; ++b) t.data()[offset + b] = static_cast<uint8_t>(v >> (8 * b));
}

// Binds the context's device-pointer fields to the side buffers' device addresses: the layout's
// emu handles (1 + buffer index) say which buffer each field names.
void bind_device_pointers(CallArgs& a) {
  Tensor* context = a.patch("scheduleContext");
  if (context == nullptr) return;
  TensorMap present;
  for (const std::string& name : fwb_layout::buffer_names()) {
    if (a.address(name) != 0) present[name] = Tensor();
  }
  fwb_layout::bind_handles(*context, present);
  for (const fwb_layout::ContextField& f : fwb_layout::context_fields()) {
    if (!f.device_pointer) continue;
    const std::string buffer = fwb_layout::buffer_of(read_u64(*context, f.offset, f.bytes));
    write_u64(*context, f.offset, f.bytes, buffer.empty() ? 0 : a.address(buffer));
  }
}

aclnnStatus get_workspace_size(const Problem& problem, CallArgs& a) {
  const Params& p = problem.params<Params>();
  bind_device_pointers(a);
  const aclTensor* context = a.tensor("scheduleContext");
  const aclIntArray* max_out_shape = a.int_array(p.max_out_shape);
  if (a.entry() == "aclnnFfnWorkerBatchingV2") {
    return a.get_workspace_size<V2GetWorkspaceSizeFn>(
        context, p.expert_num, max_out_shape, p.token_dtype, p.need_schedule, p.layer_num, false, a.tensor("y"),
        a.tensor("groupList"), a.tensor("sessionIds"), a.tensor("microBatchIds"), a.tensor("tokenIds"),
        a.tensor("expertOffsets"), a.tensor("dynamicScale"), a.tensor("actualTokenNum"));
  }
  return a.get_workspace_size<GetWorkspaceSizeFn>(
      context, p.expert_num, max_out_shape, p.token_dtype, p.need_schedule, p.layer_num, a.tensor("y"),
      a.tensor("groupList"), a.tensor("sessionIds"), a.tensor("microBatchIds"), a.tensor("tokenIds"),
      a.tensor("expertOffsets"), a.tensor("dynamicScale"), a.tensor("actualTokenNum"));
}

}  // namespace

const AscendOp& op() {
  static const AscendOp kOp{{"aclnnFfnWorkerBatching", "aclnnFfnWorkerBatchingV2"}, supports, get_workspace_size};
  return kOp;
}

}  // namespace opgate::ascend::ffn_worker_batching
