// The ScheduleContext byte image (routing-ops.md §1.2, attention_ffn_schedule.h, #pragma pack(1)),
// the token_data_buf slot layout (§1.3) and the emu's buffer handles.
#include "device/layout/ffn_worker_batching.h"

#include <cstring>

#include <fmt/format.h>

namespace opgate::layout::ffn_worker_batching {
namespace {

namespace fwb_ref = ref::ffn_worker_batching;

// Reserved bytes of the context and unused bytes of a token slot are poisoned, so a read at a
// wrong offset gets a value no field or payload holds.
constexpr uint8_t kReservePoison = 0xCD;
uint8_t slot_poison(int64_t byte_in_slot) { return static_cast<uint8_t>(0xC3 ^ (byte_in_slot * 29)); }

using SC = ScheduleContext;

}  // namespace

bool ScheduleContext::operator==(const ScheduleContext& o) const {
  for (const ContextField& f : context_fields()) {
    if (this->*f.member != o.*f.member) return false;
  }
  return true;
}

const std::vector<ContextField>& context_fields() {
  static const std::vector<ContextField> fields = {
      {"common.session_num", &SC::session_num, 0, 4, false},
      {"common.micro_batch_num", &SC::micro_batch_num, 4, 4, false},
      {"common.micro_batch_size", &SC::micro_batch_size, 8, 4, false},
      {"common.selected_expert_num", &SC::selected_expert_num, 12, 4, false},
      {"common.expert_num", &SC::expert_num, 16, 4, false},
      {"common.attn_to_ffn_token_size", &SC::attn_to_ffn_token_size, 20, 4, false},
      {"common.ffn_to_attn_token_size", &SC::ffn_to_attn_token_size, 24, 4, false},
      {"common.schedule_mode", &SC::schedule_mode, 28, 4, false},
      {"control.run_flag", &SC::run_flag, 128, 4, false},
      {"attention.token_info_buf", &SC::attn_token_info_buf, 256, 8, true},
      {"attention.token_info_buf_size", &SC::attn_token_info_buf_size, 264, 8, false},
      {"attention.token_data_buf", &SC::attn_token_data_buf, 272, 8, true},
      {"attention.token_data_buf_size", &SC::attn_token_data_buf_size, 280, 8, false},
      {"attention.micro_batch_id", &SC::attn_micro_batch_id, 288, 4, false},
      {"ffn.token_info_buf", &SC::token_info_buf, 384, 8, true},
      {"ffn.token_info_buf_size", &SC::token_info_buf_size, 392, 8, false},
      {"ffn.token_data_buf", &SC::token_data_buf, 400, 8, true},
      {"ffn.token_data_buf_size", &SC::token_data_buf_size, 408, 8, false},
      {"ffn.polling_index", &SC::polling_index, 416, 8, false},
      {"ffn.layer_ids_buf", &SC::layer_ids_buf, 512, 8, true},
      {"ffn.layer_ids_buf_size", &SC::layer_ids_buf_size, 520, 8, false},
      {"ffn.session_ids_buf", &SC::session_ids_buf, 528, 8, true},
      {"ffn.session_ids_buf_size", &SC::session_ids_buf_size, 536, 8, false},
      {"ffn.micro_batch_ids_buf", &SC::micro_batch_ids_buf, 544, 8, true},
      {"ffn.micro_batch_ids_buf_size", &SC::micro_batch_ids_buf_size, 552, 8, false},
      {"ffn.expert_ids_buf", &SC::expert_ids_buf, 560, 8, true},
      {"ffn.expert_ids_buf_size", &SC::expert_ids_buf_size, 568, 8, false},
      {"ffn.out_num", &SC::out_num, 576, 4, false},
  };
  return fields;
}

const ContextField* field_at(int64_t offset) {
  for (const ContextField& f : context_fields()) {
    if (offset >= f.offset && offset < f.offset + f.bytes) return &f;
  }
  return nullptr;
}

Tensor build_context(const ScheduleContext& c) {
  Tensor image = Tensor::zeros(DType::kI8, {kContextBytes});
  std::memset(image.data(), kReservePoison, static_cast<size_t>(kContextBytes));
  for (const ContextField& f : context_fields()) {
    const uint64_t v = c.*f.member;
    for (int64_t b = 0; b < f.bytes; ++b) image.data()[f.offset + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  return image;
}

ScheduleContext parse_context(const Tensor& image) {
  OPGATE_CHECK(static_cast<int64_t>(image.nbytes()) >= kContextBytes, "parse_context: image shorter than 1024 bytes");
  ScheduleContext c;
  for (const ContextField& f : context_fields()) {
    uint64_t v = 0;
    for (int64_t b = 0; b < f.bytes; ++b) v |= static_cast<uint64_t>(image.data()[f.offset + b]) << (8 * b);
    c.*f.member = v;
  }
  return c;
}

ScheduleContext context_of(const Params& p) {
  const fwb_ref::Dims d = fwb_ref::dims(p);
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  ScheduleContext c;
  c.session_num = u(d.a);
  c.micro_batch_num = u(p.micro_batch_num);
  c.micro_batch_size = u(d.bs);
  c.selected_expert_num = u(d.k);
  c.expert_num = u(p.layer_num > 1 ? p.expert_num / p.layer_num : p.expert_num);
  c.attn_to_ffn_token_size = u(p.token_size);
  c.ffn_to_attn_token_size = u(2 * d.h);
  c.schedule_mode = 0;  // FFN only
  c.run_flag = 1;       // running
  c.token_info_buf_size = u(d.a * p.micro_batch_num * fwb_ref::descriptor_words(p) * 4);
  c.token_data_buf_size = u(d.a * p.micro_batch_num * d.bs * d.k * p.token_size);
  c.polling_index = u(p.polling_index);
  if (!fwb_ref::is_recv(p)) {
    c.session_ids_buf_size = c.micro_batch_ids_buf_size = u(d.a * 4);
    c.expert_ids_buf_size = u(d.a * d.bs * d.k * 4);
    c.out_num = u(p.out_num);
  }
  return c;
}

const std::vector<std::string>& buffer_names() {
  static const std::vector<std::string> names = {"tokenInfoBuf", "tokenDataBuf", "sessionIdsBuf", "microBatchIdsBuf",
                                                 "expertIdsBuf"};
  return names;
}

uint64_t handle_of(const std::string& buffer) {
  const auto& names = buffer_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == buffer) return i + 1;
  }
  return 0;
}

std::string buffer_of(uint64_t handle) {
  const auto& names = buffer_names();
  return handle >= 1 && handle <= names.size() ? names[handle - 1] : std::string();
}

void bind_handles(Tensor& image, const TensorMap& buffers) {
  ScheduleContext c = parse_context(image);
  const std::pair<uint64_t ScheduleContext::*, const char*> bindings[] = {
      {&SC::token_info_buf, "tokenInfoBuf"},   {&SC::token_data_buf, "tokenDataBuf"},
      {&SC::session_ids_buf, "sessionIdsBuf"}, {&SC::micro_batch_ids_buf, "microBatchIdsBuf"},
      {&SC::expert_ids_buf, "expertIdsBuf"}};
  for (const auto& [member, name] : bindings) {
    if (buffers.count(name)) c.*member = handle_of(name);
  }
  for (const ContextField& f : context_fields()) {
    if (!f.device_pointer) continue;
    for (int64_t b = 0; b < f.bytes; ++b) image.data()[f.offset + b] = static_cast<uint8_t>(c.*f.member >> (8 * b));
  }
}

void clear_pointers(Tensor& image) {
  for (const ContextField& f : context_fields()) {
    if (f.device_pointer) std::memset(image.data() + f.offset, 0, static_cast<size_t>(f.bytes));
  }
}

int64_t slot_offset(const Params& p, int64_t s, int64_t m, int64_t bs, int64_t k) {
  const fwb_ref::Dims d = fwb_ref::dims(p);
  return ((s * p.micro_batch_num + m) * d.bs + bs) * d.k * p.token_size + k * p.token_size;
}

Tensor pack_token_data(const Params& p, const Tensor& tokens, const Tensor* scales) {
  const fwb_ref::Dims d = fwb_ref::dims(p);
  const int64_t slots = d.a * p.micro_batch_num * d.bs * d.k;
  const auto payload = static_cast<size_t>(d.h) * dtype_size(tokens.dtype());
  const auto slot_bytes = static_cast<size_t>(p.token_size);
  // Bytes after the payload (after the scale on the int8 path) keep the slot poison; one template
  // of it is computed once and copied into every slot.
  const size_t filled = payload + (scales != nullptr ? 4 : 0);
  std::vector<uint8_t> tail(slot_bytes > filled ? slot_bytes - filled : 0);
  for (size_t b = 0; b < tail.size(); ++b) tail[b] = slot_poison(static_cast<int64_t>(filled + b));
  Tensor data = Tensor::empty(DType::kU8, {slots * p.token_size});  // every byte is written below
  for (int64_t t = 0; t < slots; ++t) {
    // Slots are numbered in (s, m, bs, k) order, so slot t starts at t * HS.
    uint8_t* slot = data.data() + static_cast<size_t>(t) * slot_bytes;
    std::memcpy(slot, tokens.data() + static_cast<size_t>(t) * payload, payload);
    if (scales != nullptr) std::memcpy(slot + payload, scales->data() + t * 4, 4);
    if (!tail.empty()) std::memcpy(slot + filled, tail.data(), tail.size());  // an empty vector's data() may be null
  }
  return data;
}

TensorMap parse_token_data(const Params& p, const Tensor& data) {
  const fwb_ref::Dims d = fwb_ref::dims(p);
  const SpecMap in = fwb_ref::input_specs(p);
  Tensor tokens = Tensor::zeros(in.at("tokens").dtype, in.at("tokens").shape);
  const auto payload = static_cast<size_t>(d.h) * dtype_size(tokens.dtype());
  TensorMap out;
  Tensor scales;
  if (in.count("tokenScales")) scales = Tensor::zeros(DType::kF32, in.at("tokenScales").shape);
  for (int64_t s = 0; s < d.a; ++s) {
    for (int64_t m = 0; m < p.micro_batch_num; ++m) {
      for (int64_t bs = 0; bs < d.bs; ++bs) {
        for (int64_t k = 0; k < d.k; ++k) {
          const int64_t t = ((s * p.micro_batch_num + m) * d.bs + bs) * d.k + k;
          const uint8_t* slot = data.data() + slot_offset(p, s, m, bs, k);
          std::memcpy(tokens.data() + static_cast<size_t>(t) * payload, slot, payload);
          if (scales.defined()) std::memcpy(scales.data() + t * 4, slot + d.h, 4);
        }
      }
    }
  }
  out["tokens"] = tokens;
  if (scales.defined()) out["tokenScales"] = scales;
  return out;
}

TensorMap pack(const Params& p, const TensorMap& canonical) {
  TensorMap images;
  for (const char* name : {"scheduleContext", "tokenInfoBuf", "sessionIdsBuf", "microBatchIdsBuf", "expertIdsBuf"}) {
    if (canonical.count(name)) images[name] = canonical.at(name).clone();
  }
  const auto scales = canonical.find("tokenScales");
  images["tokenDataBuf"] =
      pack_token_data(p, canonical.at("tokens"), scales == canonical.end() ? nullptr : &scales->second);
  return images;
}

SpecMap output_images(const Params& p, const SpecMap& specs) {
  SpecMap out;
  for (const auto& [name, spec] : specs) {
    if (name != "scheduleContext") out[name] = spec;
  }
  if (fwb_ref::is_recv(p)) {
    const SpecMap in = fwb_ref::input_specs(p);
    out["scheduleContext"] = in.at("scheduleContext");
    out["tokenInfoBuf"] = in.at("tokenInfoBuf");
  }
  return out;
}

TensorMap unpack(const Params& /*p*/, const TensorMap& images) {
  TensorMap out = images;
  if (auto it = out.find("scheduleContext"); it != out.end()) {
    it->second = it->second.clone();
    clear_pointers(it->second);
  }
  return out;
}

}  // namespace opgate::layout::ffn_worker_batching
