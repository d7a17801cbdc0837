// Layouts of aclnnIncreFlashAttentionV4: V3's packing over the left-padding windows.
#include "device/layout/incre_flash_attention_v4.h"

#include "device/layout/incre_flash_attention_v3.h"

namespace opgate::layout::incre_flash_attention_v4 {

namespace v3 = ::opgate::layout::incre_flash_attention_v3;

TensorMap pack(const Params& p, const TensorMap& canonical) {
  TensorMap out = v3::pack_window(p.base, canonical, ref::incre_flash_attention_v4::windows(p));
  const auto it = canonical.find("kvPaddingSize");
  if (it != canonical.end()) out["kvPaddingSize"] = it->second.clone();
  return out;
}

SpecMap output_images(const Params& p, const SpecMap& specs) { return v3::output_images(p.base, specs); }

TensorMap unpack(const Params& p, const TensorMap& images) { return v3::unpack(p.base, images); }

}  // namespace opgate::layout::incre_flash_attention_v4
