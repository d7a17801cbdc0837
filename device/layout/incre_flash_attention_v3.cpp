// Packing of aclnnIncreFlashAttentionV3 inputs (attention-and-ffn.md §1.3 index mapping): KV rows
// (one D-vector per (b, n2, t)) are copied to their layout, list or page-cache position; slots the
// kernel must not read get finite poison (§1.5 E3: positions >= L_b and unreferenced blocks).
#include "device/layout/incre_flash_attention_v3.h"

#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace opgate::layout::incre_flash_attention_v3 {
namespace {

namespace ifa = ref::incre_flash_attention_v3;
using ifa::KvCache;

// D-vector rows of one KV tensor image, addressed by row index.
struct RowSink {
  uint8_t* data;
  size_t row_bytes;
  void put(int64_t row, const uint8_t* src) const { std::memcpy(data + static_cast<size_t>(row) * row_bytes, src, row_bytes); }
};

std::vector<uint8_t> encode_row(DType t, const std::vector<double>& values) {
  std::vector<uint8_t> row(values.size() * dtype_size(t));
  for (size_t i = 0; i < values.size(); ++i) store_element(t, row.data() + i * dtype_size(t), values[i]);
  return row;
}

// Poison rows of (b, n2): key along sign(q[b, n2*G, :]) (int8: sign(q * key scale)), value flat.
struct Poison {
  std::vector<uint8_t> key, value;
};

Poison own_poison(const Params& p, const TensorMap& in, int64_t b, int64_t n2) {
  const int64_t d = p.head_dim;
  const bool int8 = p.kv_dtype == DType::kI8;
  const Tensor& q = in.at("query");
  const int64_t n = n2 * ifa::group_size(p);
  std::vector<double> k(static_cast<size_t>(d)), v(static_cast<size_t>(d), int8 ? kPoisonInt8 : kPoisonValue);
  for (int64_t i = 0; i < d; ++i) {
    double dir = q.get((b * p.num_heads + n) * d + i);
    if (int8) {
      const Tensor& sc = in.at("antiquantScale");
      dir *= sc.get(p.antiquant == ifa::QuantMode::kPerTensor ? 0 : n2 * d + i);
    }
    k[static_cast<size_t>(i)] = (dir < 0 ? -1.0 : 1.0) * (int8 ? kPoisonInt8 : kPoisonKey);
  }
  return {encode_row(p.kv_dtype, k), encode_row(p.kv_dtype, v)};
}

Poison shared_poison(const Params& p) {
  const bool int8 = p.kv_dtype == DType::kI8;
  const auto d = static_cast<size_t>(p.head_dim);
  return {encode_row(p.kv_dtype, std::vector<double>(d, int8 ? kPoisonInt8 : kPoisonKey)),
          encode_row(p.kv_dtype, std::vector<double>(d, int8 ? kPoisonInt8 : kPoisonValue))};
}

// Row index of (b, n2, t) inside one dense layout image with batch extent `bx`, KV heads n2s and
// length s (BNSD: n2-major; BSH/BSND: t-major).
int64_t dense_row(const std::string& layout, int64_t b, int64_t n2, int64_t t, int64_t n2s, int64_t s) {
  return layout == "BNSD" ? (b * n2s + n2) * s + t : (b * s + t) * n2s + n2;
}

void pack_dense(const Params& p, const TensorMap& in, const std::vector<ifa::KvWindow>& windows, TensorMap& out) {
  const int64_t n2s = ifa::kv_heads(p);
  const int64_t cap = ifa::kv_capacity(p);
  const SpecMap sp = ifa::specs(p);
  const bool list = p.kv_cache == KvCache::kList;
  const size_t row_bytes = static_cast<size_t>(p.head_dim) * dtype_size(p.kv_dtype);
  for (const char* name : {"key", "value"}) {
    const uint8_t* src = in.at(name).data();
    for (int64_t b = 0; b < (list ? p.batch : 1); ++b) {
      const std::string image = list ? fmt::format("{}.{}", name, b) : name;
      out[image] = Tensor::zeros(p.kv_dtype, sp.at(image).shape);
    }
    for (int64_t b = 0; b < p.batch; ++b) {
      const std::string image = list ? fmt::format("{}.{}", name, b) : name;
      const RowSink sink{out.at(image).data(), row_bytes};
      const int64_t s = ifa::kv_tensor_len(p, b);
      const int64_t bi = list ? 0 : b;
      for (int64_t n2 = 0; n2 < n2s; ++n2) {
        const Poison poison = own_poison(p, in, b, n2);
        const std::vector<uint8_t>& bad = std::string(name) == "key" ? poison.key : poison.value;
        for (int64_t t = 0; t < s; ++t) {
          const int64_t row = dense_row(p.input_layout, bi, n2, t, n2s, s);
          const ifa::KvWindow& w = windows[static_cast<size_t>(b)];
          const bool used = t >= w.start && t < w.start + w.length;
          sink.put(row, used ? src + static_cast<size_t>(((b * n2s + n2) * cap + t)) * row_bytes : bad.data());
        }
      }
    }
  }
}

void pack_paged(const Params& p, const TensorMap& in, TensorMap& out) {
  const int64_t n2s = ifa::kv_heads(p);
  const int64_t cap = ifa::kv_capacity(p);
  const int64_t bs = p.block_size;
  const std::vector<int64_t> lengths = ifa::effective_lengths(p);
  const SpecMap sp = ifa::specs(p);
  const Tensor& table = in.at("blocktable");
  const size_t row_bytes = static_cast<size_t>(p.head_dim) * dtype_size(p.kv_dtype);
  const Poison shared = shared_poison(p);
  for (const char* name : {"key", "value"}) {
    const bool is_key = std::string(name) == "key";
    out[name] = Tensor::zeros(p.kv_dtype, sp.at(name).shape);
    const RowSink sink{out.at(name).data(), row_bytes};
    const int64_t rows = p.block_num * bs * n2s;
    for (int64_t r = 0; r < rows; ++r) sink.put(r, (is_key ? shared.key : shared.value).data());
    const uint8_t* src = in.at(name).data();
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t len = lengths[static_cast<size_t>(b)];
      for (int64_t n2 = 0; n2 < n2s; ++n2) {
        const Poison poison = own_poison(p, in, b, n2);
        for (int64_t t = 0; t < (len + bs - 1) / bs * bs; ++t) {
          const auto blk = static_cast<int64_t>(table.get(b * p.max_block_num_per_seq + t / bs));
          const int64_t r = t % bs;
          const int64_t row = p.kv_cache == KvCache::kPaged3d ? (blk * bs + r) * n2s + n2 : (blk * n2s + n2) * bs + r;
          const uint8_t* data = t < len ? src + static_cast<size_t>((b * n2s + n2) * cap + t) * row_bytes
                                        : (is_key ? poison.key : poison.value).data();
          sink.put(row, data);
        }
      }
    }
  }
}

Tensor reshaped_clone(const Tensor& t, const Shape& shape) { return t.clone().reshaped(shape); }

}  // namespace

TensorMap pack(const Params& p, const TensorMap& in) { return pack_window(p, in, ifa::full_windows(p)); }

TensorMap pack_window(const Params& p, const TensorMap& in, const std::vector<ifa::KvWindow>& windows) {
  OPGATE_CHECK(static_cast<int64_t>(windows.size()) == p.batch, "pack_window: one window per batch");
  const SpecMap sp = ifa::specs(p);
  TensorMap out;
  for (const char* name : {"query", "pseShift", "attenMask", "antiquantScale", "antiquantOffset", "quantScale2",
                           "quantOffset2", "blocktable"}) {
    if (in.count(name) != 0) out[name] = reshaped_clone(in.at(name), sp.at(name).shape);
  }
  if (ifa::is_paged(p)) {
    pack_paged(p, in, out);
  } else {
    pack_dense(p, in, windows, out);
  }
  return out;
}

SpecMap output_images(const Params& /*p*/, const SpecMap& specs) { return {{"attentionOut", specs.at("attentionOut")}}; }

TensorMap unpack(const Params& /*p*/, const TensorMap& images) { return {{"attentionOut", images.at("attentionOut")}}; }

}  // namespace opgate::layout::incre_flash_attention_v3
