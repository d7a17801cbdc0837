// Stand-in aclnnIncreFlashAttentionV4: V3's Params rebuilt from what arrived (standin_ifa::params_of),
// kvPaddingSize recorded as one more input, then the V4 reference's validate and the V4 emulator.
#include <type_traits>

#include <fmt/format.h>

#include "device/ascend/incre_flash_attention_v4.h"
#include "device/emu/incre_flash_attention_v4.h"
#include "reference/incre_flash_attention_v4.h"
#include "standin_incre_flash_attention_v3.h"
#include "standin_ops.h"

namespace ifa4 = opgate::ref::incre_flash_attention_v4;

STANDIN_API aclnnStatus aclnnIncreFlashAttentionV4GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclTensor* dequantScale1,
    const aclTensor* quantScale1, const aclTensor* dequantScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, const aclTensor* antiquantScale, const aclTensor* antiquantOffset,
    const aclTensor* blocktable, const aclTensor* kvPaddingSize, int64_t numHeads, double scaleValue,
    char* inputLayout, int64_t numKeyValueHeads, int64_t blockSize, int64_t innerPrecise,
    const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor);
STANDIN_API aclnnStatus aclnnIncreFlashAttentionV4(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream);
static_assert(std::is_same_v<decltype(&aclnnIncreFlashAttentionV4GetWorkspaceSize),
                             opgate::ascend::incre_flash_attention_v4::GetWorkspaceSizeFn>);
static_assert(std::is_same_v<decltype(&aclnnIncreFlashAttentionV4), AclnnLaunchFn>);

aclnnStatus aclnnIncreFlashAttentionV4GetWorkspaceSize(
    const aclTensor* query, const aclTensorList* key, const aclTensorList* value, const aclTensor* pseShift,
    const aclTensor* attenMask, const aclIntArray* actualSeqLengths, const aclTensor* dequantScale1,
    const aclTensor* quantScale1, const aclTensor* dequantScale2, const aclTensor* quantScale2,
    const aclTensor* quantOffset2, const aclTensor* antiquantScale, const aclTensor* antiquantOffset,
    const aclTensor* blocktable, const aclTensor* kvPaddingSize, int64_t numHeads, double scaleValue,
    char* inputLayout, int64_t numKeyValueHeads, int64_t blockSize, int64_t innerPrecise,
    const aclTensor* attentionOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  standin::OpCall call("aclnnIncreFlashAttentionV4");
  call.input("query", query);
  call.input_list("key", key);
  call.input_list("value", value);
  const std::pair<const char*, const aclTensor*> inputs[] = {
      {"pseShift", pseShift},         {"attenMask", attenMask},           {"dequantScale1", dequantScale1},
      {"quantScale1", quantScale1},   {"dequantScale2", dequantScale2},   {"quantScale2", quantScale2},
      {"quantOffset2", quantOffset2}, {"antiquantScale", antiquantScale}, {"antiquantOffset", antiquantOffset},
      {"blocktable", blocktable},     {"kvPaddingSize", kvPaddingSize}};
  for (const auto& [name, t] : inputs) call.input(name, t);
  call.output("attentionOut", attentionOut);
  bool has_lengths = false;
  const std::vector<int64_t> lengths = call.int_array("actualSeqLengths", actualSeqLengths, &has_lengths);
  const std::string layout = inputLayout == nullptr ? "" : inputLayout;
  call.attr("numHeads", std::to_string(numHeads));
  call.attr("scaleValue", fmt::format("{}", scaleValue));
  call.attr("inputLayout", layout);
  call.attr("numKeyValueHeads", std::to_string(numKeyValueHeads));
  call.attr("blockSize", std::to_string(blockSize));
  call.attr("innerPrecise", std::to_string(innerPrecise));
  if (aclnnStatus rc = call.check()) return rc;
  const size_t members = key != nullptr ? key->tensors.size() : 0;
  ifa4::Params p;
  p.base = standin_ifa::params_of(call.specs(), members, lengths, has_lengths, numHeads, scaleValue, layout,
                                  numKeyValueHeads, blockSize, innerPrecise);
  p.has_kv_padding_size = kvPaddingSize != nullptr;
  opgate::SpecMap specs = call.specs();
  const bool single = p.base.kv_cache != ifa4::KvCache::kList;
  if (single) {
    for (const char* name : {"key", "value"}) {
      if (specs.count(fmt::format("{}.0", name)) != 0) {
        specs[name] = specs.at(fmt::format("{}.0", name));
        specs.erase(fmt::format("{}.0", name));
      }
    }
  }
  // validate reads descriptors only; the padding value is data, read by the emulator on launch.
  if (opgate::Status st = ifa4::validate(p, specs); !st.is_ok()) return call.reject(st, workspaceSize, executor);
  return call.accept(workspaceSize, executor, [p, single](const opgate::TensorMap& in, opgate::TensorMap& out) {
    opgate::TensorMap images = in;
    if (single) {
      for (const char* name : {"key", "value"}) {
        images[name] = images.at(fmt::format("{}.0", name));
        images.erase(fmt::format("{}.0", name));
      }
    }
    return opgate::emu::incre_flash_attention_v4::run(p, images, out, "");
  });
}

aclnnStatus aclnnIncreFlashAttentionV4(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                       aclrtStream stream) {
  return standin::launch("aclnnIncreFlashAttentionV4", workspace, workspaceSize, executor, stream);
}
