// Stand-in aclnnFfnWorkerBatching (and V2): the first phase sees only the attributes and the
// descriptors, as a real host does; the kernel reads the ScheduleContext from device memory,
// follows its FFN-area pointers to the side buffers (routing-ops.md §1.2, §1.3) — which therefore
// must be real device addresses of buffers large enough for the sizes the context states — runs
// opgate's emulator, and in RECV mode writes its side effects (context polling_index, the cleared
// token_info_buf descriptors) back to device memory.
#include <cstring>
#include <type_traits>

#include <fmt/format.h>

#include "device/ascend/ffn_worker_batching.h"
#include "device/emu/ffn_worker_batching.h"
#include "device/layout/ffn_worker_batching.h"
#include "reference/ffn_worker_batching.h"
#include "standin_ops.h"

namespace fwb = opgate::ref::ffn_worker_batching;
namespace fwb_layout = opgate::layout::ffn_worker_batching;
using opgate::Tensor;
using opgate::TensorMap;

STANDIN_API aclnnStatus aclnnFfnWorkerBatchingGetWorkspaceSize(
    const aclTensor* scheduleContext, int64_t expertNum, const aclIntArray* maxOutShape, int64_t tokenDtype,
    int64_t needSchedule, int64_t layerNum, const aclTensor* y, const aclTensor* groupList,
    const aclTensor* sessionIds, const aclTensor* microBatchIds, const aclTensor* tokenIds,
    const aclTensor* expertOffsets, const aclTensor* dynamicScale, const aclTensor* actualTokenNum,
    uint64_t* workspaceSize, aclOpExecutor** executor);
STANDIN_API aclnnStatus aclnnFfnWorkerBatching(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                               aclrtStream stream);
static_assert(std::is_same_v<decltype(&aclnnFfnWorkerBatchingGetWorkspaceSize),
                             opgate::ascend::ffn_worker_batching::GetWorkspaceSizeFn>);
static_assert(std::is_same_v<decltype(&aclnnFfnWorkerBatching), AclnnLaunchFn>);

namespace {

// The kernel: context and side buffers from device memory, the emulator, RECV side effects back.
opgate::Status run_kernel(fwb::Params p, uint8_t* context_address, const TensorMap& in, TensorMap& out) {
  const Tensor& context = in.at("scheduleContext");
  const fwb_layout::ScheduleContext c = fwb_layout::parse_context(context);
  p.micro_batch_num = static_cast<int64_t>(c.micro_batch_num);
  p.token_size = static_cast<int64_t>(c.attn_to_ffn_token_size);
  p.out_num = static_cast<int64_t>(c.out_num);
  p.polling_index = static_cast<int64_t>(c.polling_index);
  struct Side {
    const char* name;
    uint64_t address, bytes;
    opgate::DType dtype;
  };
  std::vector<Side> sides = {{"tokenInfoBuf", c.token_info_buf, c.token_info_buf_size, opgate::DType::kI32},
                             {"tokenDataBuf", c.token_data_buf, c.token_data_buf_size, opgate::DType::kU8}};
  if (!fwb::is_recv(p)) {
    sides.push_back({"sessionIdsBuf", c.session_ids_buf, c.session_ids_buf_size, opgate::DType::kI32});
    sides.push_back({"microBatchIdsBuf", c.micro_batch_ids_buf, c.micro_batch_ids_buf_size, opgate::DType::kI32});
    sides.push_back({"expertIdsBuf", c.expert_ids_buf, c.expert_ids_buf_size, opgate::DType::kI32});
  }
  TensorMap images;
  images["scheduleContext"] = context.clone();
  fwb_layout::clear_pointers(images["scheduleContext"]);
  std::string bound;
  for (const Side& s : sides) {
    std::vector<uint8_t> bytes;
    std::string why;
    if (!standin::read_device(s.address, s.bytes, bytes, why)) {
      return opgate::internal_error(fmt::format("ScheduleContext {} pointer: {}", s.name, why));
    }
    const int64_t n = static_cast<int64_t>(s.bytes / opgate::dtype_size(s.dtype));
    auto t = Tensor::from_bytes(s.dtype, {n}, std::move(bytes));
    if (!t) return t.status();
    images[s.name] = *t;
    bound += fmt::format(" {}={}B", s.name, s.bytes);
  }
  standin::trace("aclnnFfnWorkerBatching side buffers bound:" + bound);
  if (fwb::is_recv(p)) {
    out["scheduleContext"] = Tensor::zeros(opgate::DType::kI8, context.shape());
    out["tokenInfoBuf"] = Tensor::zeros(opgate::DType::kI32, images.at("tokenInfoBuf").shape());
  }
  OPGATE_TRY(opgate::emu::ffn_worker_batching::run(p, images, out, ""));
  if (!fwb::is_recv(p)) return opgate::Status::ok();
  // Side effects, in device memory: the context (its pointers as they were) and the descriptors.
  Tensor updated = out.at("scheduleContext");
  for (const fwb_layout::ContextField& f : fwb_layout::context_fields()) {
    if (f.device_pointer) std::memcpy(updated.data() + f.offset, context.data() + f.offset, static_cast<size_t>(f.bytes));
  }
  std::memcpy(context_address, updated.data(), updated.nbytes());
  std::string why;
  const Tensor& info = out.at("tokenInfoBuf");
  if (!standin::write_device(c.token_info_buf, info.data(), info.nbytes(), why)) return opgate::internal_error(why);
  out.erase("scheduleContext");
  out.erase("tokenInfoBuf");
  return opgate::Status::ok();
}

aclnnStatus first_phase(const char* op, const aclTensor* scheduleContext, int64_t expertNum,
                        const aclIntArray* maxOutShape, int64_t tokenDtype, int64_t needSchedule, int64_t layerNum,
                        const aclTensor* const (&outputs)[8], uint64_t* workspaceSize, aclOpExecutor** executor) {
  standin::OpCall call(op);
  call.input("scheduleContext", scheduleContext);
  const char* names[] = {"y", "groupList", "sessionIds", "microBatchIds", "tokenIds", "expertOffsets",
                         "dynamicScale", "actualTokenNum"};
  for (size_t i = 0; i < 8; ++i) call.output(names[i], outputs[i]);
  fwb::Params p;
  p.expert_num = expertNum;
  p.max_out_shape = call.int_array("maxOutShape", maxOutShape);
  p.token_dtype = tokenDtype;
  p.need_schedule = needSchedule;
  p.layer_num = layerNum;
  const std::pair<const char*, int64_t> attrs[] = {
      {"expertNum", expertNum}, {"tokenDtype", tokenDtype}, {"needSchedule", needSchedule}, {"layerNum", layerNum}};
  for (const auto& [name, v] : attrs) call.attr(name, std::to_string(v));
  if (aclnnStatus rc = call.check()) return rc;
  // The host cannot read the context: its values are the kernel's business. Values that pass the
  // kernel-only requirements stand in for them, and a kInvalidCase verdict is not a host rejection.
  fwb::Params host = p;
  host.micro_batch_num = 1;
  host.token_size = fwb::payload_bytes(p);
  if (opgate::Status st = fwb::validate(host, call.specs());
      !st.is_ok() && st.code() == opgate::StatusCode::kAclnnError) {
    return call.reject(st, workspaceSize, executor);
  }
  auto* context_address = scheduleContext == nullptr
                              ? nullptr
                              : static_cast<uint8_t*>(scheduleContext->data) + scheduleContext->offset;
  return call.accept(workspaceSize, executor, [p, context_address](const TensorMap& in, TensorMap& out) {
    return run_kernel(p, context_address, in, out);
  });
}

}  // namespace

aclnnStatus aclnnFfnWorkerBatchingGetWorkspaceSize(
    const aclTensor* scheduleContext, int64_t expertNum, const aclIntArray* maxOutShape, int64_t tokenDtype,
    int64_t needSchedule, int64_t layerNum, const aclTensor* y, const aclTensor* groupList,
    const aclTensor* sessionIds, const aclTensor* microBatchIds, const aclTensor* tokenIds,
    const aclTensor* expertOffsets, const aclTensor* dynamicScale, const aclTensor* actualTokenNum,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  const aclTensor* const outputs[8] = {y, groupList, sessionIds, microBatchIds, tokenIds, expertOffsets, dynamicScale,
                                       actualTokenNum};
  return first_phase("aclnnFfnWorkerBatching", scheduleContext, expertNum, maxOutShape, tokenDtype, needSchedule,
                     layerNum, outputs, workspaceSize, executor);
}

aclnnStatus aclnnFfnWorkerBatching(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                   aclrtStream stream) {
  return standin::launch("aclnnFfnWorkerBatching", workspace, workspaceSize, executor, stream);
}
