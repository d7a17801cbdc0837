// The activations of aclnnMoeFFN in exact double arithmetic (spec attention-and-ffn.md §2.4):
// fastgelu as the kernel's AscendC FasterGelu defines it, and the gelu (tanh form), relu and silu
// that the successor API aclnnFFN accepts (extensions for MoeFFN).
#pragma once

#include <cstdint>
#include <string_view>

namespace opgate::ref::moe_ffn {

// The activation names of aclnnFFN (`GetActiveType` in aclnn_ffn.cpp), in its enum order.
enum class Activation : uint8_t { kFastGelu, kRelu, kSilu, kGelu, kGeGlu, kSwiGlu, kReGlu, kInvalid };

// Case-insensitive match against the aclnn names; kInvalid for anything else.
Activation parse_activation(std::string_view name);
const char* activation_name(Activation a);
// geglu, swiglu, reglu (and kInvalid, which the aclnn layer sorts with them).
bool is_glu(Activation a);

// fastgelu: h / (1 + exp(-1.702 h))
// gelu:     h * sigmoid(1.5957691216057308 * (h + 0.044715 h^3))   (tanh form)
// relu:     max(h, 0)
// silu:     h / (1 + exp(-h))
// Exact math for the four element-wise activations; 0 for the GLU kinds (never evaluated).
double activate(Activation a, double h);

}  // namespace opgate::ref::moe_ffn
