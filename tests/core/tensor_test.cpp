// Unit tests of core/tensor: factories, checked element access, sharing versus cloning, and
// conversions (including exact integer-to-integer saturation).

#include "core/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

namespace opgate {
namespace {

TEST(TensorShape, helpers) {
  EXPECT_EQ(shape_numel({2, 3}), 6);
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({0, 5}), 0);
  EXPECT_EQ(shape_to_string({2, 3}), "[2, 3]");
  EXPECT_EQ(shape_to_string({7}), "[7]");
  EXPECT_EQ(shape_to_string({}), "[]");
  // Row-major: the last axis moves fastest; strides {3*4, 4, 1}.
  EXPECT_EQ(contiguous_strides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(contiguous_strides({}), std::vector<int64_t>{});
}

TEST(TensorFactory, default_is_undefined) {
  Tensor t;
  EXPECT_FALSE(t.defined());
  EXPECT_EQ(t.data(), nullptr);
}

// memcpy/memset of 0 bytes from a null pointer is undefined (the CI fuzz campaign's UBSan finding
// with H = 0), so an empty defined tensor must still hand out a pointer.
TEST(TensorFactory, empty_tensor_data_is_not_null) {
  Tensor empty = Tensor::zeros(DType::kF16, {4, 0});
  EXPECT_TRUE(empty.defined());
  EXPECT_EQ(empty.nbytes(), 0u);
  EXPECT_NE(empty.data(), nullptr);
  EXPECT_NE(static_cast<const Tensor&>(empty).data(), nullptr);
  EXPECT_NE(empty.ptr<uint16_t>(), nullptr);
}

TEST(TensorFactory, zeros_and_full) {
  Tensor z = Tensor::zeros(DType::kF32, {2, 3});
  EXPECT_TRUE(z.defined());
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(z.nbytes(), 24u);
  EXPECT_EQ(z.rank(), 2);
  EXPECT_EQ(z.dim(1), 3);
  for (int64_t i = 0; i < z.numel(); ++i) EXPECT_EQ(z.get(i), 0.0);
  // 1/3 rounds to f16 0x3555 ((1 + 341/1024) / 4) in every element.
  Tensor f = Tensor::full(DType::kF16, {3}, 1.0 / 3.0);
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(f.bits(i), 0x3555u);
  Tensor scalar = Tensor::full(DType::kI32, {}, 7.0);
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.get(0), 7.0);
  EXPECT_EQ(Tensor::zeros(DType::kF64, {0, 4}).nbytes(), 0u);
}

TEST(TensorFactory, from_bytes_checks_the_size) {
  Expected<Tensor> ok = Tensor::from_bytes(DType::kU8, {2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->at({1, 0}), 4.0);
  // float32 [2, 3] needs 6 * 4 = 24 bytes.
  Expected<Tensor> short_bytes = Tensor::from_bytes(DType::kF32, {2, 3}, std::vector<uint8_t>(20));
  ASSERT_FALSE(short_bytes.has_value());
  EXPECT_EQ(short_bytes.status().code(), StatusCode::kParseError);
  EXPECT_NE(short_bytes.status().message().find("expected 24 bytes"), std::string::npos)
      << short_bytes.status().message();
  EXPECT_NE(short_bytes.status().message().find("got 20"), std::string::npos);
  Expected<Tensor> negative = Tensor::from_bytes(DType::kU8, {2, -1}, {});
  ASSERT_FALSE(negative.has_value());
  EXPECT_NE(negative.status().message().find("negative"), std::string::npos);
}

TEST(TensorFactory, view_writes_into_shared_storage) {
  auto storage = Storage::adopt(std::vector<uint8_t>(16, uint8_t{0xAA}));
  Tensor v = Tensor::view(DType::kF32, {2}, storage, 4);
  v.set(0, 1.5);
  float stored;
  std::memcpy(&stored, storage->data() + 4, sizeof stored);
  EXPECT_EQ(stored, 1.5f);
  EXPECT_EQ(storage->data()[0], 0xAA);  // the guard byte before the view is untouched
  EXPECT_EQ(storage->data()[12], 0xAA);
  EXPECT_DEATH(Tensor::view(DType::kF32, {4}, storage, 4), "internal check failed");
}

TEST(TensorFactory, from_values_rounds_and_saturates) {
  Tensor t = Tensor::from_values(DType::kI8, {2, 2}, {1, -2, 2.5, 300});
  EXPECT_EQ(t.at({0, 0}), 1.0);
  EXPECT_EQ(t.at({0, 1}), -2.0);
  EXPECT_EQ(t.at({1, 0}), 2.0);  // 2.5 ties to even
  EXPECT_EQ(t.at({1, 1}), 127.0);
  EXPECT_DEATH(Tensor::from_values(DType::kI8, {3}, {1, 2}), "internal check failed");
}

TEST(TensorAccess, get_set_and_bits) {
  Tensor t = Tensor::zeros(DType::kF16, {2});
  t.set(0, 1.0 + 0x1p-11, Rounding::kHalfAway);  // tie -> away: 0x3C01
  t.set(1, 1.0 + 0x1p-11);                       // tie -> even: 0x3C00
  EXPECT_EQ(t.bits(0), 0x3C01u);
  EXPECT_EQ(t.bits(1), 0x3C00u);
  t.set_bits(1, 0xC000);
  EXPECT_EQ(t.get(1), -2.0);
  EXPECT_EQ(t.ptr<uint16_t>()[1], 0xC000);
  EXPECT_DEATH(t.get(2), "internal check failed");
  EXPECT_DEATH(t.get(-1), "internal check failed");
  EXPECT_DEATH(Tensor().get(0), "internal check failed");
}

TEST(TensorAccess, flat_index_and_unravel) {
  Tensor t = Tensor::zeros(DType::kU8, {2, 3, 4});
  // {1, 2, 3} -> 1*12 + 2*4 + 3 = 23.
  EXPECT_EQ(t.flat_index({1, 2, 3}), 23);
  EXPECT_EQ(t.flat_index({0, 0, 0}), 0);
  EXPECT_EQ(t.unravel(23), (std::vector<int64_t>{1, 2, 3}));
  // 13 = 1*12 + 0*4 + 1.
  EXPECT_EQ(t.unravel(13), (std::vector<int64_t>{1, 0, 1}));
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.flat_index(t.unravel(i)), i);
  Tensor scalar = Tensor::zeros(DType::kU8, {});
  EXPECT_EQ(scalar.flat_index({}), 0);
  EXPECT_EQ(scalar.unravel(0), std::vector<int64_t>{});
  EXPECT_DEATH(t.flat_index({2, 0, 0}), "internal check failed");
  EXPECT_DEATH(t.flat_index({0, -1, 0}), "internal check failed");
  EXPECT_DEATH(t.flat_index({1, 2}), "internal check failed");
  EXPECT_DEATH(t.unravel(24), "internal check failed");
}

TEST(TensorSharing, copies_share_and_clone_is_deep) {
  Tensor a = Tensor::from_values(DType::kF32, {2}, {1, 2});
  Tensor shared = a;
  Tensor deep = a.clone();
  a.set(0, 9);
  EXPECT_EQ(shared.get(0), 9.0);
  EXPECT_EQ(deep.get(0), 1.0);
  EXPECT_FALSE(Tensor().clone().defined());
  // A clone of a view copies only the viewed bytes.
  auto storage = Storage::allocate(8, Storage::Init::kZeroed);
  Tensor v = Tensor::view(DType::kU8, {2}, storage, 3);
  v.set(1, 5);
  Tensor vc = v.clone();
  EXPECT_EQ(vc.nbytes(), 2u);
  EXPECT_EQ(vc.get(1), 5.0);
}

TEST(TensorSharing, reshaped_and_reinterpreted) {
  Tensor a = Tensor::from_values(DType::kF16, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = a.reshaped({3, 2});
  EXPECT_EQ(r.at({2, 1}), 6.0);
  r.set(0, -1);
  EXPECT_EQ(a.get(0), -1.0);  // same storage
  EXPECT_DEATH(a.reshaped({4, 2}), "internal check failed");
  // f16 1.0 is 0x3C00; read as bf16: exponent 0x78 = 120, value 2^(120-127) = 2^-7.
  Tensor one = Tensor::full(DType::kF16, {1}, 1.0);
  Tensor as_bf16 = one.reinterpreted(DType::kBF16);
  EXPECT_EQ(as_bf16.bits(0), 0x3C00u);
  EXPECT_EQ(as_bf16.get(0), 0x1p-7);
  EXPECT_DEATH(one.reinterpreted(DType::kF32), "internal check failed");
}

TEST(TensorConvert, floating_to_integer_with_rounding) {
  Tensor f = Tensor::from_values(DType::kF64, {4}, {2.5, -2.5, 1e6, std::nan("")});
  Tensor even = f.converted(DType::kI8);
  Tensor away = f.converted(DType::kI8, Rounding::kHalfAway);
  EXPECT_EQ(even.dtype(), DType::kI8);
  EXPECT_EQ(even.shape(), f.shape());
  const double kEven[] = {2, -2, 127, 0};
  const double kAway[] = {3, -3, 127, 0};
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(even.get(i), kEven[i]) << i;
    EXPECT_EQ(away.get(i), kAway[i]) << i;
  }
  // 65520 is the f16 overflow midpoint: inf under RNE.
  Tensor h = Tensor::from_values(DType::kF64, {1}, {65520}).converted(DType::kF16);
  EXPECT_EQ(h.bits(0), 0x7C00u);
  Tensor b = Tensor::from_values(DType::kF32, {2}, {0.5, 0}).converted(DType::kBool);
  EXPECT_EQ(b.get(0), 1.0);
  EXPECT_EQ(b.get(1), 0.0);
  // Same dtype: an independent copy.
  Tensor same = f.converted(DType::kF64);
  same.set(0, 0);
  EXPECT_EQ(f.get(0), 2.5);
}

TEST(TensorConvert, integer_to_integer_is_exact_and_saturating) {
  Tensor i64 = Tensor::zeros(DType::kI64, {4});
  i64.set_bits(0, 0x7FFFFFFFFFFFFFFFull);  // INT64_MAX: through double it would become 2^63
  i64.set_bits(1, static_cast<uint64_t>(int64_t{-5}));
  i64.set_bits(2, (uint64_t{1} << 53) + 1);  // 2^53 + 1 is not a double
  i64.set_bits(3, static_cast<uint64_t>(int64_t{-200}));
  Tensor u64 = i64.converted(DType::kU64);
  EXPECT_EQ(u64.bits(0), 0x7FFFFFFFFFFFFFFFull);
  EXPECT_EQ(u64.bits(1), 0u);
  EXPECT_EQ(u64.bits(2), (uint64_t{1} << 53) + 1);
  Tensor i8 = i64.converted(DType::kI8);
  EXPECT_EQ(i8.get(0), 127.0);
  EXPECT_EQ(i8.get(1), -5.0);
  EXPECT_EQ(i8.get(3), -128.0);
  Tensor big = Tensor::zeros(DType::kU64, {1});
  big.set_bits(0, 0xFFFFFFFFFFFFFFFFull);
  EXPECT_EQ(big.converted(DType::kI64).bits(0), 0x7FFFFFFFFFFFFFFFull);
  EXPECT_EQ(big.converted(DType::kI32).get(0), 2147483647.0);
  Tensor min64 = Tensor::zeros(DType::kI64, {1});
  min64.set_bits(0, 0x8000000000000000ull);
  EXPECT_EQ(min64.converted(DType::kI32).get(0), -2147483648.0);
  EXPECT_EQ(min64.converted(DType::kU8).get(0), 0.0);
}

TEST(TensorCompare, bytes_equal) {
  Tensor a = Tensor::from_values(DType::kU8, {2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(a.bytes_equal(a.clone()));
  EXPECT_FALSE(a.bytes_equal(a.reshaped({4})));
  EXPECT_FALSE(a.bytes_equal(a.reinterpreted(DType::kI8)));
  Tensor b = a.clone();
  b.set(3, 5);
  EXPECT_FALSE(a.bytes_equal(b));
  EXPECT_TRUE(Tensor().bytes_equal(Tensor()));
  EXPECT_FALSE(a.bytes_equal(Tensor()));
  EXPECT_TRUE(Tensor::zeros(DType::kF32, {0}).bytes_equal(Tensor::zeros(DType::kF32, {0})));
}

TEST(TensorSpecs, equality) {
  TensorSpec a{DType::kF16, {2, 3}, true};
  TensorSpec b = a;
  EXPECT_TRUE(a == b);
  b.present = false;
  EXPECT_FALSE(a == b);
}

}  // namespace
}  // namespace opgate
