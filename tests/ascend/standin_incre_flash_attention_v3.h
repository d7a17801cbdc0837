// What the aclnnIncreFlashAttentionV3 stand-in shares with V4's (standin_incre_flash_attention_v4.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/incre_flash_attention_v3.h"

namespace standin_ifa {

// The reference's Params rebuilt from what arrived: the attributes verbatim, the KV form from the
// tensor lists and the block table, the dimensions and quantisation forms from the descriptors.
opgate::ref::incre_flash_attention_v3::Params params_of(const opgate::SpecMap& s, size_t kv_members,
                                                        const std::vector<int64_t>& lengths, bool has_lengths,
                                                        int64_t heads, double scale, const std::string& layout,
                                                        int64_t kv_heads, int64_t block_size, int64_t inner_precise);

}  // namespace standin_ifa
