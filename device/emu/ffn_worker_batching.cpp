// CPU emulation of the A2/A3 aclnnFfnWorkerBatching kernel: ScheduleContext read through bound
// handles, the RECV poll and side effects (§1.5.3), the fp32 mask test and stable sort (§1.4), the
// byte gather with the kernel's strides (§1.3), the group listers and what they leave unwritten or
// overwrite with stale UB (§1.5.4), plus the fault backend's defect catalogue.
#include "device/emu/ffn_worker_batching.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "core/rng.h"
#include "device/layout/ffn_worker_batching.h"

namespace opgate::emu::ffn_worker_batching {
namespace {

namespace fwb_ref = ref::ffn_worker_batching;
namespace fwb_layout = layout::ffn_worker_batching;
using Params = fwb_ref::Params;

enum class Defect {
  kNone,
  kUnstableSort,
  kMaskedCounted,
  kTokenIdsOffsetsSwapped,
  kInt8ScaleAtAlign32,
  kSessionFromSlot,
  kFlagsNotCleared,
  kPollingIndexNotWrapped,
  kMaskThresholdInclusive,
  kGroupListNoTerminator,
  kMultiCoreCountsOverwritten,
  kRecvPadNotMasked,
  kMicroBatchAfterIncrement,
  kOutNumIgnored,
  kYConvertedFtz,
};

using DefectEntry = ::opgate::DefectEntry<Defect>;

constexpr DefectEntry kDefects[] = {
    {Defect::kUnstableSort, "fwb.unstable_sort",
     "entries with equal expert ids leave the sort in descending flattened position (later token first)"},
    {Defect::kMaskedCounted, "fwb.masked_counted",
     "the valid mask is not applied: masked entries (id >= 1e6) are counted in actualTokenNum and groupList"},
    {Defect::kTokenIdsOffsetsSwapped, "fwb.token_ids_offsets_swapped",
     "tokenIds gets the k slot and expertOffsets the bs index (the doc's wording read the other way)"},
    {Defect::kInt8ScaleAtAlign32, "fwb.int8_scale_at_align32",
     "the int8 path reads the fp32 dynamic scale at byte Align32(H) of the slot instead of byte H"},
    {Defect::kSessionFromSlot, "fwb.session_from_slot",
     "NORM takes the session id from the out-buffer slot index a instead of session_ids_buf[a]"},
    {Defect::kFlagsNotCleared, "fwb.flags_not_cleared",
     "RECV resets the consumed expert ids but leaves the descriptors' flags at 1"},
    {Defect::kPollingIndexNotWrapped, "fwb.polling_index_not_wrapped",
     "RECV writes polling_index + 1 back without the modulo M"},
    {Defect::kMaskThresholdInclusive, "fwb.mask_threshold_inclusive",
     "the mask test keeps key >= -1e6, so an id of exactly 1000000 counts as valid"},
    {Defect::kGroupListNoTerminator, "fwb.group_list_no_terminator",
     "groupList lacks the [0, 0] row after the last used expert"},
    {Defect::kMultiCoreCountsOverwritten, "fwb.multi_core_counts_overwritten",
     "NORM with more than 512 tokens: per-core expert counts overwrite instead of add, so an expert "
     "spanning two cores' chunks reports one chunk's count"},
    {Defect::kRecvPadNotMasked, "fwb.recv_pad_not_masked",
     "RECV pads each session's ids to a multiple of 8 with 0 instead of INT32_MAX (phantom expert-0 tokens)"},
    {Defect::kMicroBatchAfterIncrement, "fwb.micro_batch_after_increment",
     "RECV reports microBatchIds and reads tokens at the polling index after its increment"},
    {Defect::kOutNumIgnored, "fwb.out_num_ignored",
     "NORM batches every slot of the side buffers (A of them) instead of the first out_num"},
    {Defect::kYConvertedFtz, "fwb.y_converted_ftz",
     "fp16/bf16 tokens are copied through an fp32 conversion that flushes subnormals and quiets NaNs"},
};

// GROUP_LISTING_MULTI_CORE_LENGTH (ffn_wb_common.h): above this many tokens NORM lists groups on
// all cores.
constexpr int64_t kSingleCoreMax = 512;
// Vector cores of the NORM tiling (tiling UT: coreNum 64 on Ascend910B).
constexpr int64_t kVectorCores = 64;
// The RECV scan pads each session's ids to 32 bytes.
constexpr int64_t kPadElements = 8;
constexpr int32_t kPadValue = std::numeric_limits<int32_t>::max();

Expected<Defect> parse_defect(const std::string& name) {
  return ::opgate::parse_defect(kDefects, Defect::kNone, name, "ffn_worker_batching");
}

// Stale UB content, for rows a lister copies out without having written them.
int64_t stale_ub(int64_t index) {
  return static_cast<int64_t>(CounterRng(0xB0B, "emu.fwb.ub").bits(static_cast<uint64_t>(index)));
}

// The emu's device memory: buffers by name, reached through the handles bound into the context.
struct Memory {
  TensorMap buffers;
  Expected<Tensor> at(uint64_t handle, const char* field) const {
    const std::string name = fwb_layout::buffer_of(handle);
    const auto it = buffers.find(name);
    if (it == buffers.end()) {
      return Status(StatusCode::kBackendError,
                    fmt::format("emu ffn_worker_batching: {} = {:#x} points to no buffer", field, handle));
    }
    return it->second;
  }
};

struct Sorted {
  std::vector<int32_t> ids;           // expert id per output row
  std::vector<int64_t> positions;     // flattened position per output row
};

// SortCompute: key = -fp32(e) (CAST_ROUND), valid iff key > -1e6, compact in order, sort descending
// by key; the hardware emits equal keys in input order.
Sorted sort_valid(const std::vector<int32_t>& ids, Defect defect) {
  const float threshold = -static_cast<float>(fwb_ref::kMaskThreshold);
  std::vector<std::pair<float, int64_t>> kept;
  for (size_t f = 0; f < ids.size(); ++f) {
    const float key = -f32_from_double(static_cast<double>(ids[f]), Rounding::kHalfAway);
    const bool valid = defect == Defect::kMaskedCounted ||
                       (defect == Defect::kMaskThresholdInclusive ? key >= threshold : key > threshold);
    if (valid) kept.emplace_back(key, static_cast<int64_t>(f));
  }
  std::stable_sort(kept.begin(), kept.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return defect == Defect::kUnstableSort && a.second > b.second;
  });
  Sorted s;
  for (const auto& [key, f] : kept) {
    s.ids.push_back(ids[static_cast<size_t>(f)]);
    s.positions.push_back(f);
  }
  return s;
}

void write_row(Tensor& gl, int64_t row, int64_t id, int64_t count) {
  if (row >= gl.dim(0)) return;  // the lister's buffer holds expertNum rows
  gl.set_bits(2 * row, static_cast<uint64_t>(id));
  gl.set_bits(2 * row + 1, static_cast<uint64_t>(count));
}

// ffn_wb_group_listing.h ComputeOneCore (NORM) and ffn_wb_scan_group_listing_one_core.h (RECV):
// [id, count] at each id change, the terminator if there is room; only those rows are copied out.
void list_one_core(const std::vector<int32_t>& ids, bool recv, Tensor& gl, Defect defect) {
  int64_t rows = 0;
  if (!ids.empty() || !recv) {
    // With no valid entry NORM still emits the "first id" it reads from an unloaded buffer.
    int64_t last = ids.empty() ? stale_ub(0) : ids[0];
    int64_t count = 0;
    for (int32_t id : ids) {
      if (id != last) {
        write_row(gl, rows++, last, count);
        last = id;
        count = 0;
      }
      ++count;
    }
    write_row(gl, rows++, last, count);
  }
  if (rows < gl.dim(0) && defect != Defect::kGroupListNoTerminator) write_row(gl, rows, 0, 0);
}

// KernelFfnWBGroupListing multi-core: per-core counts by expert id merged into one array, compact
// rows and the terminator assembled in UB, then all expertNum rows copied out (stale tail).
void list_multi_core(const std::vector<int32_t>& ids, Tensor& gl, Defect defect) {
  const int64_t experts = gl.dim(0);
  const auto n = static_cast<int64_t>(ids.size());
  const int64_t chunk = (n + kVectorCores - 1) / kVectorCores;
  std::vector<int64_t> counts(static_cast<size_t>(experts), 0);
  for (int64_t begin = 0; begin < n; begin += chunk) {
    std::vector<int64_t> partial(static_cast<size_t>(experts), 0);
    for (int64_t i = begin; i < std::min(n, begin + chunk); ++i) {
      const int32_t id = ids[static_cast<size_t>(i)];
      if (id >= 0 && id < experts) ++partial[static_cast<size_t>(id)];
    }
    for (size_t e = 0; e < partial.size(); ++e) {
      if (partial[e] == 0) continue;
      counts[e] = defect == Defect::kMultiCoreCountsOverwritten ? partial[e] : counts[e] + partial[e];
    }
  }
  Tensor ub = Tensor::zeros(DType::kI64, {experts, 2});
  for (int64_t i = 0; i < ub.numel(); ++i) ub.set_bits(i, static_cast<uint64_t>(stale_ub(i + 1)));
  int64_t rows = 0;
  for (int64_t e = 0; e < experts; ++e) {
    if (counts[static_cast<size_t>(e)] > 0) write_row(ub, rows++, e, counts[static_cast<size_t>(e)]);
  }
  if (rows < experts && defect != Defect::kGroupListNoTerminator) write_row(ub, rows, 0, 0);
  std::memcpy(gl.data(), ub.data(), gl.nbytes());
}

// Flushes subnormals and quiets NaNs, as an fp16/bf16 -> fp32 -> fp16/bf16 round trip on a
// flush-to-zero vector unit would.
uint16_t through_fp32_ftz(DType t, uint16_t bits) {
  const double v = t == DType::kF16 ? f16_to_double(bits) : bf16_to_double(bits);
  const bool subnormal = v != 0 && std::isfinite(v) && std::fabs(v) < (t == DType::kF16 ? 0x1p-14 : 0x1p-126);
  const double w = subnormal ? std::copysign(0.0, v) : std::isnan(v) ? std::nan("") : v;
  return t == DType::kF16 ? f16_from_double(w) : bf16_from_double(w);
}

}  // namespace

std::vector<DefectInfo> defects() {
  return defect_infos(kDefects);
}

Status run(const Params& p, const TensorMap& in, TensorMap& out, const std::string& defect_name) {
  OPGATE_ASSIGN_OR_RETURN(const Defect defect, parse_defect(defect_name));
  const bool recv = fwb_ref::is_recv(p);
  Memory mem;
  for (const std::string& name : fwb_layout::buffer_names()) {
    if (in.count(name)) mem.buffers[name] = in.at(name);
  }
  Tensor ctx = in.at("scheduleContext").clone();
  if (recv) {
    // In-place arguments: the kernel updates the caller's context and token_info_buf.
    std::memcpy(out.at("scheduleContext").data(), ctx.data(), ctx.nbytes());
    std::memcpy(out.at("tokenInfoBuf").data(), in.at("tokenInfoBuf").data(), in.at("tokenInfoBuf").nbytes());
    ctx = out.at("scheduleContext");
    mem.buffers["tokenInfoBuf"] = out.at("tokenInfoBuf");
  }
  fwb_layout::bind_handles(ctx, mem.buffers);
  const fwb_layout::ScheduleContext c = fwb_layout::parse_context(ctx);
  const auto a_n = static_cast<int64_t>(c.session_num);
  const auto m_n = static_cast<int64_t>(c.micro_batch_num);
  const auto bs_n = static_cast<int64_t>(c.micro_batch_size);
  const auto k_n = static_cast<int64_t>(c.selected_expert_num);
  const auto hs = static_cast<int64_t>(c.attn_to_ffn_token_size);
  const int64_t h = fwb_ref::dims(p).h;
  const int64_t bsk = bs_n * k_n;
  OPGATE_ASSIGN_OR_RETURN(const Tensor data, mem.at(c.token_data_buf, "ffn.token_data_buf"));

  std::vector<int32_t> ids;
  int64_t stride = bsk;  // bskProduct: entries per slot (NORM) or per padded session row (RECV)
  int64_t poll = 0;
  Tensor session_ids, micro_batch_ids;
  if (recv) {
    OPGATE_ASSIGN_OR_RETURN(Tensor info, mem.at(c.token_info_buf, "ffn.token_info_buf"));
    poll = static_cast<int64_t>(c.polling_index);
    const int64_t words = 2 + bsk;
    float ready = 0.0f;
    for (int64_t s = 0; s < a_n; ++s) ready += static_cast<float>(info.get((s * m_n + poll) * words));
    if (ready != static_cast<float>(a_n)) {
      return invalid_case(fmt::format("emu: the RECV poll sums flags to {} of {} sessions and would spin forever",
                                      ready, a_n));
    }
    const auto next = static_cast<uint64_t>(defect == Defect::kPollingIndexNotWrapped ? poll + 1 : (poll + 1) % m_n);
    for (int64_t b = 0; b < 8; ++b) ctx.set_bits(fwb_ref::kPollingIndexOffset + b, (next >> (8 * b)) & 0xFF);
    stride = (bsk + kPadElements - 1) / kPadElements * kPadElements;
    const int32_t pad = defect == Defect::kRecvPadNotMasked ? 0 : kPadValue;
    ids.assign(static_cast<size_t>(a_n * stride), pad);
    for (int64_t s = 0; s < a_n; ++s) {
      const int64_t base = (s * m_n + poll) * words;
      for (int64_t j = 0; j < bsk; ++j) {
        ids[static_cast<size_t>(s * stride + j)] = static_cast<int32_t>(info.get(base + 2 + j));
        info.set(base + 2 + j, static_cast<double>(kPadValue));
      }
      if (defect != Defect::kFlagsNotCleared) info.set(base, 0.0);
    }
  } else {
    OPGATE_ASSIGN_OR_RETURN(Tensor experts, mem.at(c.expert_ids_buf, "ffn.expert_ids_buf"));
    OPGATE_ASSIGN_OR_RETURN(session_ids, mem.at(c.session_ids_buf, "ffn.session_ids_buf"));
    OPGATE_ASSIGN_OR_RETURN(micro_batch_ids, mem.at(c.micro_batch_ids_buf, "ffn.micro_batch_ids_buf"));
    const int64_t slots = defect == Defect::kOutNumIgnored ? a_n : static_cast<int64_t>(c.out_num);
    for (int64_t f = 0; f < slots * bsk; ++f) ids.push_back(static_cast<int32_t>(experts.get(f)));
  }

  const Sorted sorted = sort_valid(ids, defect);
  const auto actual = static_cast<int64_t>(sorted.ids.size());
  const auto tsz = static_cast<int64_t>(dtype_size(fwb_ref::token_element(p)));
  const int64_t scale_at = defect == Defect::kInt8ScaleAtAlign32 ? (h + 31) / 32 * 32 : h;
  Tensor& y = out.at("y");
  for (int64_t i = 0; i < actual && i < y.dim(0); ++i) {
    const int64_t f = sorted.positions[static_cast<size_t>(i)];
    const int64_t a = f / stride;
    const int64_t r = f % stride;
    const int64_t bs = r / k_n;
    const int64_t k = r - bs * k_n;
    int64_t sess = a;
    int64_t mb = defect == Defect::kMicroBatchAfterIncrement ? (poll + 1) % m_n : poll;
    if (!recv) {
      sess = defect == Defect::kSessionFromSlot ? a : static_cast<int64_t>(session_ids.get(a));
      mb = static_cast<int64_t>(micro_batch_ids.get(a));
    }
    // ffn_wb_gather_out_all.h: byte strides session M*BS*K*HS, micro batch BS*K*HS, bs K*HS, k HS.
    const int64_t base = sess * m_n * bsk * hs + mb * bsk * hs + bs * k_n * hs + k * hs;
    const int64_t read = p.token_dtype == 2 ? std::max(h, scale_at + 4) : h * tsz;
    if (base < 0 || base + read > static_cast<int64_t>(data.nbytes())) {
      return Status(StatusCode::kBackendError, fmt::format("emu: row {} reads token_data_buf at byte {}, beyond its {} "
                                                           "bytes (a memory fault on a device)",
                                                           i, base, data.nbytes()));
    }
    std::memcpy(y.data() + i * h * tsz, data.data() + base, static_cast<size_t>(h * tsz));
    if (defect == Defect::kYConvertedFtz && tsz == 2) {
      for (int64_t j = 0; j < h; ++j) {
        y.set_bits(i * h + j, through_fp32_ftz(y.dtype(), static_cast<uint16_t>(y.bits(i * h + j))));
      }
    }
    if (p.token_dtype == 2) std::memcpy(out.at("dynamicScale").data() + i * 4, data.data() + base + scale_at, 4);
    const bool swap = defect == Defect::kTokenIdsOffsetsSwapped;
    out.at("sessionIds").set(i, static_cast<double>(sess));
    out.at("microBatchIds").set(i, static_cast<double>(mb));
    out.at("tokenIds").set(i, static_cast<double>(swap ? k : bs));
    out.at("expertOffsets").set(i, static_cast<double>(swap ? bs : k));
  }
  out.at("actualTokenNum").set(0, static_cast<double>(actual));
  Tensor& gl = out.at("groupList");
  if (recv || actual <= kSingleCoreMax) {
    list_one_core(sorted.ids, recv, gl, defect);
  } else {
    list_multi_core(sorted.ids, gl, defect);
  }
  return Status::ok();
}

}  // namespace opgate::emu::ffn_worker_batching
