// Exact activations of aclnnMoeFFN (spec attention-and-ffn.md §2.4), written in the overflow-free
// form x * sigmoid(c x) so that large |x| never produces inf/inf.
#include "reference/moe_ffn/moe_ffn_activation.h"

#include <cctype>
#include <cmath>

namespace opgate::ref::moe_ffn {
namespace {

struct Named {
  const char* name;
  Activation kind;
};

constexpr Named kNames[] = {
    {"fastgelu", Activation::kFastGelu}, {"relu", Activation::kRelu},   {"silu", Activation::kSilu},
    {"gelu", Activation::kGelu},         {"geglu", Activation::kGeGlu}, {"swiglu", Activation::kSwiGlu},
    {"reglu", Activation::kReGlu},
};

// sigmoid(z) without overflow for either sign of z.
double sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

constexpr double kFastGeluCoefficient = 1.702;
constexpr double kGeluCubic = 0.044715;
constexpr double kGeluScale = 1.5957691216057308;  // 2 * sqrt(2 / pi)

}  // namespace

Activation parse_activation(std::string_view name) {
  for (const Named& n : kNames) {
    const std::string_view want(n.name);
    if (want.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < want.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(name[i])) == want[i];
    }
    if (same) return n.kind;
  }
  return Activation::kInvalid;
}

const char* activation_name(Activation a) {
  for (const Named& n : kNames) {
    if (n.kind == a) return n.name;
  }
  return "invalid";
}

bool is_glu(Activation a) { return static_cast<int>(a) >= static_cast<int>(Activation::kGeGlu); }

double activate(Activation a, double h) {
  switch (a) {
    case Activation::kFastGelu: return h * sigmoid(kFastGeluCoefficient * h);
    case Activation::kRelu: return h > 0 ? h : 0.0;
    case Activation::kSilu: return h * sigmoid(h);
    case Activation::kGelu: return h * sigmoid(kGeluScale * (h + kGeluCubic * h * h * h));
    default: return 0.0;
  }
}

}  // namespace opgate::ref::moe_ffn
