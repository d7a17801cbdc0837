// Cases of aclnnFfnWorkerBatching: JSON binding, generator, routing and payload fills, compare plan,
// and the Traits that bind the operator's layers into a Problem.
#include "cases/ffn_worker_batching.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "cases/fill_chunks.h"
#include "cases/param_reader.h"
#include "cases/problem_binding.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "device/layout/ffn_worker_batching.h"

namespace opgate::cases::ffn_worker_batching {
namespace ref = ::opgate::ref::ffn_worker_batching;
namespace layout = ::opgate::layout::ffn_worker_batching;

namespace {

constexpr const char* kIdOutputs[] = {"sessionIds", "microBatchIds", "tokenIds", "expertOffsets"};
// Host memory a filled case may take (token data plus y); larger cases are refused, not attempted.
constexpr double kMaxCaseBytes = 3.0 * (1 << 30);

int64_t layers_of(const Params& p) { return p.layer_num > 1 ? p.layer_num : 1; }
int64_t experts_per_layer(const Params& p) { return p.expert_num / layers_of(p); }

// The expert ids of every (session, micro batch) descriptor, [A*M][BS*K], and its layer.
struct Routing {
  std::vector<int32_t> ids;
  std::vector<int32_t> layer;
};

Routing make_routing(const Params& p, const Knobs& k, uint64_t seed) {
  const ref::Dims d = ref::dims(p);
  const int64_t descriptors = d.a * p.micro_batch_num;
  const int64_t bsk = d.bs * d.k;
  const int64_t per_layer = experts_per_layer(p);
  const int64_t used = k.used_experts > 0 ? std::min(k.used_experts, per_layer) : per_layer;
  const CounterRng layer_rng(seed, "routing.layer"), mask(seed, "routing.mask"), mask_kind(seed, "routing.mask_value");
  const CounterRng hot(seed, "routing.hot"), pick(seed, "routing.expert");
  const int32_t kMasks[] = {ref::kMaskScheduler, ref::kMaskReset, static_cast<int32_t>(ref::kMaskThreshold)};
  Routing r;
  r.ids.resize(static_cast<size_t>(descriptors * bsk));
  for (int64_t t = 0; t < descriptors; ++t) {
    const auto layer = static_cast<int32_t>(layer_rng.integer(static_cast<uint64_t>(t), 0, layers_of(p) - 1));
    r.layer.push_back(layer);
    for (int64_t j = 0; j < bsk; ++j) {
      const auto g = static_cast<uint64_t>(t * bsk + j);
      int64_t id;
      if (mask.bernoulli(g, k.mask_rate)) {
        id = k.mask_value != 0 ? k.mask_value : kMasks[mask_kind.integer(g, 0, 2)];
      } else {
        // Used ids are spread over the layer with gaps between them: those experts stay empty.
        const int64_t local =
            hot.bernoulli(g, k.hot_rate) ? per_layer - 1 : pick.integer(g, 0, used - 1) * (per_layer / used);
        id = layer * per_layer + local;
      }
      r.ids[static_cast<size_t>(t * bsk + j)] = static_cast<int32_t>(id);
    }
  }
  return r;
}

// 16-bit patterns a float conversion would change or that compare oddly: signed zeros,
// subnormals, signalling and payload-carrying quiet NaNs, infinities, and random bits.
uint64_t adversarial_16(DType t, const CounterRng& cls, const CounterRng& bits, uint64_t i) {
  const bool f16 = t == DType::kF16;
  const uint64_t sign = static_cast<uint64_t>(bits.integer(i, 0, 1)) << 15;
  const auto r = [&](int64_t lo, int64_t hi) { return static_cast<uint64_t>(bits.integer(i + (1ull << 40), lo, hi)); };
  switch (cls.integer(i, 0, 7)) {
    case 0: return sign;                                                // +-0
    case 1: return sign | (f16 ? r(1, 0x3FF) : r(1, 0x7F));             // subnormal
    case 2: return sign | (f16 ? 0x7C00 | r(1, 0x1FF) : 0x7F80 | r(1, 0x3F));  // signalling NaN
    case 3: return sign | (f16 ? 0x7E00 | r(0, 0x1FF) : 0x7FC0 | r(0, 0x3F));  // quiet NaN, payload
    case 4: return sign | (f16 ? 0x7C00 : 0x7F80);                      // infinity
    default: return r(0, 0xFFFF);
  }
}

// fp32 scale patterns: -0, subnormals, signalling NaNs, infinity, else finite values of any scale.
uint64_t adversarial_32(const CounterRng& cls, const CounterRng& bits, uint64_t i) {
  const auto r = [&](int64_t lo, int64_t hi) { return static_cast<uint64_t>(bits.integer(i, lo, hi)); };
  switch (cls.integer(i, 0, 7)) {
    case 0: return 0x80000000u;
    case 1: return r(1, 0x007FFFFF);
    case 2: return 0x7F800000u | r(1, 0x003FFFFF);
    case 3: return 0xFF800000u;
    default: {
      const int exponent = static_cast<int>(cls.integer(i + (1ull << 40), -20, 20));
      const auto v = static_cast<float>(std::ldexp(bits.normal(i), exponent));
      uint32_t u = 0;
      std::memcpy(&u, &v, 4);
      return u;
    }
  }
}

// Slots (rows of H tokens) are independent, so they are filled in parallel; each row is drawn in
// one block and converted in bulk.
void fill_payload(const Params& p, FillMode mode, uint64_t seed, Tensor& tokens, Tensor* scales) {
  const int64_t h = ref::dims(p).h;
  const CounterRng val(seed, "tokens"), cls(seed, "tokens.class");
  const CounterRng sval(seed, "tokenScales"), scls(seed, "tokenScales.class");
  const int64_t slots = tokens.numel() / std::max<int64_t>(h, 1);
  const bool int8 = tokens.dtype() == DType::kI8;
  math::parallel_for(slots, [&](int64_t t) {
    std::vector<double> row(static_cast<size_t>(h));
    const auto first = static_cast<uint64_t>(t * h);
    double amax = 0;
    switch (mode) {
      case FillMode::kExact:
        integers(val, first, h, int8 ? -128 : -64, int8 ? 127 : 64, row.data());
        store_elements(tokens, t * h, row.data(), h);
        break;
      case FillMode::kRealistic: {
        // Activations N(0, 1); int8 tokens quantised per token with scale amax / 127.
        val.normal_block(first, h, row.data());
        for (const double x : row) amax = std::max(amax, std::fabs(x));
        const double scale = static_cast<double>(static_cast<float>(std::max(amax, 1e-3) / 127));
        for (double& x : row) x = int8 ? std::max(-127.0, std::min(127.0, std::nearbyint(x / scale))) : x;
        store_elements(tokens, t * h, row.data(), h);
        break;
      }
      case FillMode::kAdversarial: {
        for (int64_t j = 0; j < h; ++j) {
          const auto i = static_cast<uint64_t>(t * h + j);
          tokens.set_bits(t * h + j, int8 ? static_cast<uint64_t>(val.integer(i, 0, 255))
                                          : adversarial_16(tokens.dtype(), cls, val, i));
        }
        // A row of only NaN/Inf patterns (likely with small H) would leave y nothing finite to
        // compare (MISTRUSTED): its first element becomes the slot number, so such rows also differ.
        bool finite = int8;
        for (int64_t j = 0; j < h && !finite; ++j) finite = std::isfinite(tokens.get(t * h + j));
        if (!finite && h > 0) tokens.set(t * h, static_cast<double>(1 + t % 1024));
        break;
      }
    }
    if (scales == nullptr) return;
    const auto u = static_cast<uint64_t>(t);
    if (mode == FillMode::kAdversarial) {
      scales->set_bits(t, adversarial_32(scls, sval, u));
    } else {
      const double scale = static_cast<double>(static_cast<float>(std::max(amax, 1e-3) / 127));
      scales->set(t, mode == FillMode::kExact ? std::ldexp(1.0, static_cast<int>(sval.integer(u, -8, 8))) : scale);
    }
  });
}

std::string entry_text(const ref::Entry& x) {
  return fmt::format("expert {} <- session {}, micro batch {}, token {}, slot {}", x.expert, x.session, x.micro_batch,
                     x.token, x.slot);
}

}  // namespace

// The accepted params: the one table the reader checks against, that `opgate list --params-of`
// prints and cases/ffn_worker_batching/README.md holds, and that the unknown-key error lists.
const std::vector<ParamDoc>& param_docs() {
  static const std::vector<ParamDoc> docs = {
      {"maxOutShape", "integer list", "[1, 1, 1, 1]", "aclnn attribute [A, BS, K, H]: sessions, micro batch size, experts per token, hidden"},
      {"expertNum", "integer", "8", "aclnn attribute: experts"},
      {"tokenDtype", "integer", "0", "aclnn attribute: 0 float16, 1 bfloat16, 2 int8 (with its scale)"},
      {"needSchedule", "integer", "0", "aclnn attribute"},
      {"layerNum", "integer", "0", "aclnn attribute: layers sharing the experts"},
      {"microBatchNum", "integer", "1", "context: micro batches M (at most 64)"},
      {"attnToFfnTokenSize", "integer", "the payload, 2H or H + 4", "context: bytes per token slot (HS)"},
      {"outNum", "integer", "A", "context, NORM: sessions to gather"},
      {"pollingIndex", "integer", "0", "context, RECV: the micro batch polled"},
      {"maskRate", "real", "0", "knob: share of entries masked"},
      {"maskValue", "integer", "0", "knob: the masked id; 0 mixes 0x7F7F7F7F, INT32_MAX and 1000000"},
      {"hotRate", "real", "0", "knob: share of unmasked entries sent to the last expert of their layer"},
      {"usedExperts", "integer", "0", "knob: distinct ids per layer, spread with gaps (0: all)"},
  };
  return docs;
}

Expected<std::pair<Params, Knobs>> from_json(const nlohmann::json& j) {
  if (!j.is_object()) return parse_error("field 'params': not an object");
  Params p;
  Knobs k;
  if (j.contains("maxOutShape")) {
    const auto& v = j["maxOutShape"];
    if (!v.is_array()) {
      return parse_error(fmt::format("field 'params.maxOutShape': expected an array, got {}", v.dump()));
    }
    p.max_out_shape.clear();
    for (const auto& e : v) {
      if (!e.is_number_integer()) {
        return parse_error(fmt::format("field 'params.maxOutShape': entries must be integers, got {}", e.dump()));
      }
      p.max_out_shape.push_back(e.get<int64_t>());
    }
  }
  nlohmann::json rest = j;
  rest.erase("maxOutShape");
  ParamReader r(rest, &param_docs());
  // Attributes keep the full int64 range: out-of-range values are what validate must reject.
  p.expert_num = r.integer("expertNum", 8, INT64_MIN, INT64_MAX);
  p.token_dtype = r.integer("tokenDtype", 0, INT64_MIN, INT64_MAX);
  p.need_schedule = r.integer("needSchedule", 0, INT64_MIN, INT64_MAX);
  p.layer_num = r.integer("layerNum", 0, INT64_MIN, INT64_MAX);
  // Context values: the kernel asserts M <= 64; HS is a u32 field.
  p.micro_batch_num = r.integer("microBatchNum", 1, 1, 64);
  const int64_t hs = r.integer("attnToFfnTokenSize", 0, 0, std::numeric_limits<uint32_t>::max());
  // outNum is a u32 context field; validate checks it against maxOutShape[0] (the default).
  const int64_t out_num = r.integer("outNum", -1, 0, std::numeric_limits<uint32_t>::max());
  p.polling_index = r.integer("pollingIndex", 0, 0, 63);
  k.mask_rate = r.real("maskRate", 0.0, 0.0, 1.0);
  k.mask_value = r.integer("maskValue", 0, 0, std::numeric_limits<int32_t>::max());
  k.hot_rate = r.real("hotRate", 0.0, 0.0, 1.0);
  k.used_experts = r.integer("usedExperts", 0, 0, 8192);
  OPGATE_TRY(r.finish());
  if (k.mask_value != 0 && k.mask_value < ref::kMaskThreshold) {
    return parse_error(
        fmt::format("field 'params.maskValue': {} is not masked (masked ids are >= 1000000)", k.mask_value));
  }
  // The default is the payload, capped to the u32 field: a payload beyond it (an absurd H) then
  // does not fit its token size, which validation rejects, and the case still writes back as
  // parameters it reads (params_json round trip).
  p.token_size = hs > 0 ? hs
                        : std::min<int64_t>(std::max<int64_t>(ref::payload_bytes(p), 1),
                                            std::numeric_limits<uint32_t>::max());
  // Its default, maxOutShape[0], is capped to the u32 field the same way (an absurd A is rejected
  // by validation, not by a case that cannot be written back).
  p.out_num = p.need_schedule == 1 ? 0
              : out_num >= 0       ? out_num
                                   : std::clamp<int64_t>(ref::dims(p).a, 0, std::numeric_limits<uint32_t>::max());
  return std::make_pair(p, k);
}

nlohmann::json to_json(const Params& p, const Knobs& k) {
  return {{"expertNum", p.expert_num},        {"maxOutShape", p.max_out_shape}, {"tokenDtype", p.token_dtype},
          {"needSchedule", p.need_schedule},  {"layerNum", p.layer_num},        {"microBatchNum", p.micro_batch_num},
          {"attnToFfnTokenSize", p.token_size}, {"outNum", p.out_num},        {"pollingIndex", p.polling_index},
          {"maskRate", k.mask_rate},          {"maskValue", k.mask_value},      {"hotRate", k.hot_rate},
          {"usedExperts", k.used_experts}};
}

nlohmann::json generate(Chooser& c) {
  Builder b;
  const bool recv = c.flag(0.5, "needSchedule");
  b.token_dtype(c.integer(0, 2, "tokenDtype"));
  // A sixth of the problems are wide enough to cross 512 tokens, NORM's multi-core listing path.
  const bool wide = c.flag(1.0 / 6, "wide");
  const int64_t a = wide ? c.integer(1, 4, "A") : c.integer(1, 6, "A");
  const int64_t bs = wide ? c.integer(48, 96, "BS") : c.integer(1, 8, "BS");
  const int64_t k = wide ? c.integer(6, 12, "K") : c.integer(1, 6, "K");
  const int64_t m = c.integer(1, 4, "microBatchNum");
  b.shape(a, bs, k, c.integer(1, 40, "H")).micro_batches(m);
  const int64_t layers = c.integer(0, 6, "layerNum");
  const int64_t per_layer = c.integer(1, 16, "expertsPerLayer");
  b.layers(layers).experts(per_layer * std::max<int64_t>(layers, 1));
  if (c.flag(0.3, "attnToFfnTokenSize")) {
    b.token_size(ref::payload_bytes(b.build().first) + c.integer(1, 64, "padding"));
  }
  if (recv) {
    b.recv(c.integer(0, m - 1, "pollingIndex"));
  } else {
    b.norm(c.integer(0, a, "outNum"));
  }
  static const std::vector<int64_t> kMaskValues = {0, ref::kMaskScheduler, ref::kMaskReset, ref::kMaskThreshold};
  b.mask(static_cast<double>(c.integer(0, 8, "maskRate")) / 8, c.one_of(kMaskValues, "maskValue"));
  b.hot(static_cast<double>(c.integer(0, 4, "hotRate")) / 4);
  if (c.flag(0.3, "usedExperts")) b.used_experts(c.integer(1, per_layer, "usedExperts"));
  return b.json();
}

Expected<TensorMap> fill(const Params& p, const Knobs& k, const SpecMap& /*specs*/, FillMode mode, uint64_t seed) {
  const ref::Dims d = ref::dims(p);
  const int64_t m_n = p.micro_batch_num;
  const int64_t bsk = d.bs * d.k;
  const double bytes = static_cast<double>(d.a) * static_cast<double>(m_n) * static_cast<double>(bsk) *
                       (static_cast<double>(p.token_size) + 4.0 * static_cast<double>(d.h));
  if (bytes > kMaxCaseBytes) {
    return invalid_case(fmt::format("the case needs about {:.1f} GiB of host memory (limit 3 GiB)", bytes / (1 << 30)));
  }
  TensorMap in;
  for (const auto& [name, spec] : ref::input_specs(p)) in[name] = Tensor::zeros(spec.dtype, spec.shape);
  const Routing routing = make_routing(p, k, seed);
  const int64_t words = ref::descriptor_words(p);
  Tensor& info = in.at("tokenInfoBuf");
  const CounterRng flag(seed, "tokenInfoBuf.flag");
  for (int64_t t = 0; t < d.a * m_n; ++t) {
    // RECV: the polled micro batch is ready everywhere; other micro batches are in flight. NORM:
    // FfnWorkerScheduler has copied every descriptor out and reset it (flag 0, ids 0x7F7F7F7F).
    const bool polled = ref::is_recv(p) && t % m_n == p.polling_index;
    const bool ready = ref::is_recv(p) && (polled || flag.bernoulli(static_cast<uint64_t>(t), 0.5));
    info.set(t * words, ready ? 1.0 : 0.0);
    info.set(t * words + 1, routing.layer[static_cast<size_t>(t)]);
    for (int64_t j = 0; j < bsk; ++j) {
      const int32_t id = ref::is_recv(p) ? routing.ids[static_cast<size_t>(t * bsk + j)] : ref::kMaskScheduler;
      info.set(t * words + 2 + j, id);
    }
  }
  if (!ref::is_recv(p)) {
    // Slot a holds the (session, micro batch) the scheduler picked; slots >= outNum hold stale
    // but well-formed entries, which a kernel must not read.
    std::vector<int64_t> pairs(static_cast<size_t>(d.a * m_n));
    std::iota(pairs.begin(), pairs.end(), 0);
    const CounterRng order(seed, "sessionIdsBuf");
    std::stable_sort(pairs.begin(), pairs.end(), [&](int64_t x, int64_t y) {
      return order.bits(static_cast<uint64_t>(x)) < order.bits(static_cast<uint64_t>(y));
    });
    for (int64_t a = 0; a < d.a; ++a) {
      const int64_t t = pairs[static_cast<size_t>(a)];
      in.at("sessionIdsBuf").set(a, static_cast<double>(t / m_n));
      in.at("microBatchIdsBuf").set(a, static_cast<double>(t % m_n));
      for (int64_t j = 0; j < bsk; ++j) {
        in.at("expertIdsBuf").set(a * bsk + j, routing.ids[static_cast<size_t>(t * bsk + j)]);
      }
    }
  }
  fill_payload(p, mode, seed, in.at("tokens"), in.count("tokenScales") ? &in.at("tokenScales") : nullptr);
  in["scheduleContext"] = layout::build_context(layout::context_of(p));
  return in;
}

ComparePlan compare_plan(const Params& p, const RefOutputs& r, FillMode /*mode*/) {
  const bool none = r.expected.at("actualTokenNum").get(0) == 0;
  const std::string rows = "rows >= actualTokenNum are not written (spec §1.5.5)";
  ComparePlan plan;
  const auto add = [&](const char* name, DType dtype, bool defined, std::string reason) {
    OutputCheck c;
    c.name = name;
    c.device_dtype = dtype;
    c.kind = defined ? CheckKind::kExact : CheckKind::kUndefined;
    c.reason = std::move(reason);
    plan.outputs.push_back(c);
  };
  const std::string empty = "actualTokenNum is 0: no row is written (spec §1.5.5)";
  add("y", ref::token_element(p), !none,
      none ? empty
           : "a byte copy of each token's payload: binary identical (README 精度口径, spec §1.8); " + rows);
  add("groupList", DType::kI64, true,
      "integer rows [expert id, count] and one [0, 0]; later rows are stale (<= 512 tokens, RECV) or stale UB "
      "(NORM > 512) on A2/A3 (spec §1.5.4)");
  for (const char* name : kIdOutputs) {
    add(name, DType::kI32, !none, none ? empty : "integer index of the batched token (spec §1.5.2, §1.5.3); " + rows);
  }
  add("dynamicScale", DType::kF32, p.token_dtype == 2 && !none,
      p.token_dtype != 2 ? "written only for tokenDtype 2 (spec §1.5.5)"
      : none             ? empty
                         : "a bit copy of the fp32 scale at byte H of the slot (spec §1.3); " + rows);
  add("actualTokenNum", DType::kI64, true, "count of entries with id < 1e6 (spec §1.4)");
  if (ref::is_recv(p)) {
    add("scheduleContext", DType::kI8, true,
        "RECV advances polling_index to (p + 1) % M and leaves every other byte alone (spec §1.5.3); device "
        "pointers are cleared by unpack");
    add("tokenInfoBuf", DType::kI32, true,
        "RECV clears the polled flags and resets their ids to INT32_MAX, nothing else (spec §1.5.3)");
  }
  return plan;
}

std::string describe(const Params& p, const std::string& output, const std::vector<int64_t>& index,
                     const TensorMap& inputs) {
  if (index.empty()) {  // the first dimension (report.html's error picture)
    if (output == "groupList") return "group";
    return output == "y" || output == "dynamicScale" || output.find("Ids") != std::string::npos ||
                   output == "expertOffsets"
               ? "output row (batch order)"
               : "";
  }
  const ref::Dims d = ref::dims(p);
  if (output == "scheduleContext") {
    const layout::ContextField* f = layout::field_at(index[0]);
    return f ? fmt::format("byte {} of {}", index[0] - f->offset, f->name) : "reserved byte";
  }
  if (output == "tokenInfoBuf") {
    const int64_t words = ref::descriptor_words(p);
    const int64_t t = index[0] / words;
    const int64_t w = index[0] % words;
    const std::string what = w == 0   ? "flag"
                             : w == 1 ? "layer_id"
                                      : fmt::format("id of token {}, slot {}", (w - 2) / d.k, (w - 2) % d.k);
    return fmt::format("session {}, micro batch {}: {}", t / p.micro_batch_num, t % p.micro_batch_num, what);
  }
  if (output == "actualTokenNum") return "";
  const std::vector<ref::Entry> order = ref::batch_order(p, inputs);
  if (output == "groupList") {
    return index[0] == 0 && order.empty() ? "group 0 (no token)" : fmt::format("group {}", index[0]);
  }
  const int64_t row = index[0];
  if (row >= static_cast<int64_t>(order.size())) return fmt::format("row {} (beyond actualTokenNum)", row);
  const std::string col = index.size() > 1 ? fmt::format(", element {}", index[1]) : "";
  return fmt::format("row {}: {}{}", row, entry_text(order[static_cast<size_t>(row)]), col);
}

OPGATE_BIND_PROBLEM(ffn_worker_batching, ref::output_names())

const OpInfo& op_info() {
  static const OpInfo info{"ffn_worker_batching", "FfnWorkerBatching", "fwb", ref::kReferenceVersion, parse, generate};
  return info;
}

}  // namespace opgate::cases::ffn_worker_batching
