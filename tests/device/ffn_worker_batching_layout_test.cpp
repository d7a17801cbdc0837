// Tests of the FfnWorkerBatching memory images (routing-ops.md §1.2, §1.3): every ScheduleContext
// field at the offset the documented packed C struct gives it, the token slot layout computed by
// hand, handle binding, and the pack/unpack contract (the build/parse round trips are properties:
// tests/properties/ffn_worker_batching_props_test.cpp).
#include "device/layout/ffn_worker_batching.h"

#include <cstddef>
#include <cstring>
#include <set>

#include <gtest/gtest.h>

#include "cases/ffn_worker_batching.h"

namespace opgate::layout::ffn_worker_batching {
namespace {

// The doc's struct (seed 000, 调用示例), compiled here so the compiler computes the offsets.
#pragma pack(push, 1)
struct DocContext {
  struct {
    uint32_t session_num, micro_batch_num, micro_batch_size, selected_expert_num, expert_num;
    uint32_t attn_to_ffn_token_size, ffn_to_attn_token_size;
    int32_t schedule_mode;
    int8_t reserve0[96];
  } common;
  struct {
    int32_t run_flag;
    int8_t reserve2[124];
  } control;
  struct {
    uint64_t token_info_buf, token_info_buf_size, token_data_buf, token_data_buf_size;
    uint32_t micro_batch_id;
    int8_t reserve5[92];
  } attention;
  struct {
    uint64_t token_info_buf, token_info_buf_size, token_data_buf, token_data_buf_size, polling_index;
    int8_t reserve3[88];
    uint64_t layer_ids_buf, layer_ids_buf_size, session_ids_buf, session_ids_buf_size;
    uint64_t micro_batch_ids_buf, micro_batch_ids_buf_size, expert_ids_buf, expert_ids_buf_size;
    uint32_t out_num;
    int8_t reserve4[60];
  } ffn;
  int8_t reserve6[384];
};
#pragma pack(pop)
static_assert(sizeof(DocContext) == 1024, "the doc's ScheduleContext is 1024 bytes");

// A context whose every field holds a distinct value of its width.
DocContext distinct_doc_context() {
  DocContext d;
  std::memset(&d, 0, sizeof d);
  d.common = {11, 12, 13, 14, 15, 16, 17, -18, {}};
  d.control.run_flag = -19;
  d.attention.token_info_buf = 0x2001000000000001ull;
  d.attention.token_info_buf_size = 0x2002;
  d.attention.token_data_buf = 0x2003000000000003ull;
  d.attention.token_data_buf_size = 0x2004;
  d.attention.micro_batch_id = 0x2005;
  d.ffn.token_info_buf = 0x3001000000000001ull;
  d.ffn.token_info_buf_size = 0x3002;
  d.ffn.token_data_buf = 0x3003000000000003ull;
  d.ffn.token_data_buf_size = 0x3004;
  d.ffn.polling_index = 0x3005;
  d.ffn.layer_ids_buf = 0x3006;
  d.ffn.layer_ids_buf_size = 0x3007;
  d.ffn.session_ids_buf = 0x3008;
  d.ffn.session_ids_buf_size = 0x3009;
  d.ffn.micro_batch_ids_buf = 0x300A;
  d.ffn.micro_batch_ids_buf_size = 0x300B;
  d.ffn.expert_ids_buf = 0x300C;
  d.ffn.expert_ids_buf_size = 0x300D;
  d.ffn.out_num = 0x300E;
  return d;
}

Tensor image_of(const DocContext& d) {
  Tensor t = Tensor::zeros(DType::kI8, {1024});
  std::memcpy(t.data(), &d, sizeof d);
  return t;
}

TEST(FfnWorkerBatchingLayout, offsets_match_the_documented_struct) {
  // The spec's table, cross-checked against the hard-coded reads of ffn_wb_get_schedule_context.h.
  EXPECT_EQ(offsetof(DocContext, common.attn_to_ffn_token_size), 20u);
  EXPECT_EQ(offsetof(DocContext, control.run_flag), 128u);
  EXPECT_EQ(offsetof(DocContext, ffn.token_info_buf), 384u);
  EXPECT_EQ(offsetof(DocContext, ffn.polling_index), 416u);
  EXPECT_EQ(offsetof(DocContext, ffn.out_num), 576u);
  const DocContext d = distinct_doc_context();
  const ScheduleContext c = parse_context(image_of(d));
  EXPECT_EQ(c.session_num, 11u);
  EXPECT_EQ(c.attn_to_ffn_token_size, 16u);
  EXPECT_EQ(c.schedule_mode, 0xFFFFFFEEu);  // -18 as a 32-bit pattern
  EXPECT_EQ(c.run_flag, 0xFFFFFFEDu);
  EXPECT_EQ(c.attn_token_data_buf, 0x2003000000000003ull);
  EXPECT_EQ(c.attn_micro_batch_id, 0x2005u);
  EXPECT_EQ(c.token_info_buf, 0x3001000000000001ull);
  EXPECT_EQ(c.polling_index, 0x3005u);
  EXPECT_EQ(c.layer_ids_buf_size, 0x3007u);
  EXPECT_EQ(c.expert_ids_buf, 0x300Cu);
  EXPECT_EQ(c.out_num, 0x300Eu);
  // build writes the same bytes as the compiler's struct everywhere but the reserved areas.
  const Tensor built = build_context(c);
  const Tensor doc = image_of(d);
  for (int64_t b = 0; b < 1024; ++b) {
    if (field_at(b) != nullptr) {
      EXPECT_EQ(built.bits(b), doc.bits(b)) << "byte " << b << " (" << field_at(b)->name << ")";
    } else {
      EXPECT_EQ(built.bits(b), 0xCDu) << "reserved byte " << b;
    }
  }
}

TEST(FfnWorkerBatchingLayout, fields_do_not_overlap_and_fit) {
  std::set<int64_t> used;
  for (const ContextField& f : context_fields()) {
    EXPECT_EQ(f.offset % f.bytes, 0) << f.name;  // every field of the packed struct is naturally aligned
    for (int64_t b = f.offset; b < f.offset + f.bytes; ++b) EXPECT_TRUE(used.insert(b).second) << f.name;
  }
  EXPECT_EQ(*used.rbegin(), 579);  // out_num ends at 580; reserve4 and reserve6 follow
}

TEST(FfnWorkerBatchingLayout, handles_bind_and_clear) {
  Tensor image = build_context(ScheduleContext{});
  TensorMap buffers;
  buffers["tokenDataBuf"] = Tensor::zeros(DType::kU8, {4});
  buffers["expertIdsBuf"] = Tensor::zeros(DType::kI32, {4});
  bind_handles(image, buffers);
  ScheduleContext c = parse_context(image);
  EXPECT_EQ(c.token_data_buf, 2u);  // handle = 1 + index in buffer_names()
  EXPECT_EQ(c.expert_ids_buf, 5u);
  EXPECT_EQ(c.token_info_buf, 0u);  // absent buffer: null
  EXPECT_EQ(buffer_of(2), "tokenDataBuf");
  EXPECT_EQ(buffer_of(0), "");
  EXPECT_EQ(buffer_of(6), "");
  clear_pointers(image);
  EXPECT_TRUE(parse_context(image) == ScheduleContext{});
}

// Slot (s, m, bs, k) of A = 2, M = 3, BS = 2, K = 3 with HS = 10 bytes:
// ((s*3 + m)*2 + bs)*3*10 + k*10; e.g. (1, 2, 1, 2) -> ((3 + 2)*2 + 1)*30 + 20 = 350.
TEST(FfnWorkerBatchingLayout, slot_offsets_by_hand) {
  auto [p, k] = cases::ffn_worker_batching::Builder().shape(2, 2, 3, 3).micro_batches(3).token_size(10).build();
  EXPECT_EQ(slot_offset(p, 0, 0, 0, 1), 10);
  EXPECT_EQ(slot_offset(p, 0, 0, 1, 0), 30);
  EXPECT_EQ(slot_offset(p, 0, 1, 0, 0), 60);
  EXPECT_EQ(slot_offset(p, 1, 0, 0, 0), 180);
  EXPECT_EQ(slot_offset(p, 1, 2, 1, 2), 350);
  // int8 with H = 3: payload at bytes 0..2, the fp32 scale at bytes 3..6 (not at Align32(H) = 32).
  p.token_dtype = 2;
  const SpecMap in = ref::ffn_worker_batching::input_specs(p);
  Tensor tokens = Tensor::from_values(DType::kI8, in.at("tokens").shape, std::vector<double>(108, -2));
  Tensor scales = Tensor::from_values(DType::kF32, in.at("tokenScales").shape, std::vector<double>(36, 0.5));
  const Tensor data = pack_token_data(p, tokens, &scales);
  ASSERT_EQ(data.numel(), 360);
  const uint8_t* slot = data.data() + 350;
  EXPECT_EQ(slot[0], 0xFE);  // -2
  float scale = 0;
  std::memcpy(&scale, slot + 3, 4);
  EXPECT_EQ(scale, 0.5f);
  EXPECT_NE(slot[7], slot[8]);  // padding is poisoned with a position-dependent pattern
}

TEST(FfnWorkerBatchingLayout, pack_and_images_per_mode) {
  const auto [norm, kn] = cases::ffn_worker_batching::Builder().shape(2, 2, 2, 4).build();
  auto in = cases::ffn_worker_batching::fill(norm, kn, ref::ffn_worker_batching::specs(norm), FillMode::kExact, 1);
  ASSERT_TRUE(in.has_value());
  TensorMap images = pack(norm, *in);
  std::set<std::string> names;
  for (const auto& kv : images) names.insert(kv.first);
  EXPECT_EQ(names, (std::set<std::string>{"scheduleContext", "tokenInfoBuf", "tokenDataBuf", "sessionIdsBuf",
                                          "microBatchIdsBuf", "expertIdsBuf"}));
  const ScheduleContext c = parse_context(images.at("scheduleContext"));
  EXPECT_EQ(c.token_data_buf, 0u);  // golden files store the context with null pointers
  EXPECT_EQ(c.token_data_buf_size, static_cast<uint64_t>(images.at("tokenDataBuf").nbytes()));
  EXPECT_EQ(c.out_num, 2u);
  EXPECT_EQ(output_images(norm, ref::ffn_worker_batching::specs(norm)).count("scheduleContext"), 0u);

  const auto [recv, kr] = cases::ffn_worker_batching::Builder().shape(2, 2, 2, 4).micro_batches(2).recv(1).build();
  const SpecMap out = output_images(recv, ref::ffn_worker_batching::specs(recv));
  EXPECT_EQ(out.at("scheduleContext").shape, (Shape{1024}));
  EXPECT_EQ(out.at("tokenInfoBuf").shape, (Shape{2 * 2 * 6}));
  // unpack clears the device pointers a backend bound into the in-place context.
  Tensor ctx = build_context(context_of(recv));
  TensorMap bufs;
  bufs["tokenInfoBuf"] = Tensor::zeros(DType::kI32, {1});
  bind_handles(ctx, bufs);
  TensorMap got;
  got["scheduleContext"] = ctx;
  EXPECT_EQ(parse_context(unpack(recv, got).at("scheduleContext")).token_info_buf, 0u);
  EXPECT_EQ(parse_context(ctx).token_info_buf, 1u);  // the device image itself is left alone
}

}  // namespace
}  // namespace opgate::layout::ffn_worker_batching
