// Unit tests of core/npy: byte-exact numpy 1.0 encoding, tolerant-but-strict decoding, one test per
// class of malformed input, a mutation sweep that must never crash, and atomic file writes.

#include "core/npy.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace opgate {
namespace {

constexpr char kOrigin[] = "golden/x/inputs/gradY.npy";

std::string header_text(const std::vector<uint8_t>& npy) {
  const size_t len = npy[8] | (npy[9] << 8);
  return std::string(npy.begin() + 10, npy.begin() + 10 + static_cast<std::ptrdiff_t>(len));
}

// A .npy file with a hand-written header (already padded or not; the decoder does not care).
std::vector<uint8_t> make_npy(const std::string& header, const std::vector<uint8_t>& data,
                              uint8_t major = 1) {
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', major, 0};
  const size_t len = header.size();
  out.push_back(static_cast<uint8_t>(len));
  out.push_back(static_cast<uint8_t>(len >> 8));
  if (major != 1) {
    out.push_back(static_cast<uint8_t>(len >> 16));
    out.push_back(static_cast<uint8_t>(len >> 24));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

Expected<Tensor> decode(const std::vector<uint8_t>& bytes) {
  return decode_npy(bytes.data(), bytes.size(), kOrigin);
}

// Decodes a file with header `header` and `data`, expecting a parse error containing `needle`.
void expect_error(const std::vector<uint8_t>& bytes, const std::string& needle) {
  Expected<Tensor> t = decode(bytes);
  ASSERT_FALSE(t.has_value()) << needle;
  EXPECT_EQ(t.status().code(), StatusCode::kParseError);
  const std::string m = t.status().message();  // a copy: status() returns by value
  EXPECT_EQ(m.rfind(std::string(kOrigin) + ": .npy ", 0), 0u) << m;
  EXPECT_NE(m.find(needle), std::string::npos) << m;
}

TEST(NpyEncode, exact_numpy_bytes_for_a_matrix) {
  Tensor t = Tensor::from_values(DType::kF16, {2, 3}, {1, 2, 3, 4, 5, 6});
  const std::vector<uint8_t> npy = encode_npy(t);
  // numpy >= 1.23 (_write_array_header / _wrap_header): the 59-character dict, 21 - len("2") = 20
  // growth spaces (79), then hlen = 80 with the newline; 10 + 80 = 90, so 64 - 90 % 64 = 38 spaces
  // of padding: header length 79 + 38 + 1 = 118 = 0x76 and the data starts at byte 128.
  const std::string dict = "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(dict.size(), 59u);
  const std::string expected_header = dict + std::string(20 + 38, ' ') + "\n";
  const std::vector<uint8_t> prefix = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x76, 0x00};
  ASSERT_EQ(npy.size(), 128u + 12u);
  EXPECT_EQ(std::vector<uint8_t>(npy.begin(), npy.begin() + 10), prefix);
  EXPECT_EQ(header_text(npy), expected_header);
  // f16 1.0 = 0x3C00, little-endian.
  EXPECT_EQ(npy[128], 0x00);
  EXPECT_EQ(npy[129], 0x3C);
}

TEST(NpyEncode, shape_spelling_and_bf16_descr) {
  std::string h = header_text(encode_npy(Tensor::zeros(DType::kF64, {5})));
  EXPECT_EQ(h.rfind("{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", 0), 0u) << h;
  h = header_text(encode_npy(Tensor::zeros(DType::kBF16, {})));
  EXPECT_EQ(h.rfind("{'descr': '<u2', 'fortran_order': False, 'shape': (), }", 0), 0u) << h;
  h = header_text(encode_npy(Tensor::zeros(DType::kBool, {1, 0, 2})));
  EXPECT_EQ(h.rfind("{'descr': '|b1', 'fortran_order': False, 'shape': (1, 0, 2), }", 0), 0u) << h;
  EXPECT_EQ(std::string(npy_descr(DType::kI8)), "|i1");
  EXPECT_EQ(std::string(npy_descr(DType::kU64)), "<u8");
}

TEST(NpyEncode, header_is_always_64_byte_aligned) {
  for (int rank = 0; rank <= 40; ++rank) {
    // A zero last extent keeps the data empty while shape[0] grows to vary the growth padding.
    Shape shape(static_cast<size_t>(rank), 1);
    if (rank > 1) {
      shape[0] = int64_t{1} << rank;
      shape.back() = 0;
    }
    const std::vector<uint8_t> npy = encode_npy(Tensor::zeros(DType::kU8, shape));
    const std::string h = header_text(npy);
    EXPECT_EQ((10 + h.size()) % 64, 0u) << rank;
    EXPECT_EQ(h.back(), '\n');
    const size_t dict_end = h.find('}');
    ASSERT_NE(dict_end, std::string::npos);
    // Growth spaces plus 1..64 pad spaces: never zero pad (numpy adds 64 when already aligned).
    EXPECT_EQ(h.find_first_not_of(' ', dict_end + 1), h.size() - 1);
    ASSERT_TRUE(decode(npy).has_value()) << rank;
  }
}

TEST(NpyDecode, round_trips_every_dtype) {
  for (DType t : kAllDTypes) {
    Tensor x = Tensor::zeros(t, {2, 3});
    for (int64_t i = 0; i < x.numel(); ++i) x.set(i, static_cast<double>(i) - 2.0);
    const std::vector<uint8_t> npy = encode_npy(x);
    Expected<Tensor> back = decode(npy);
    ASSERT_TRUE(back.has_value()) << dtype_name(t) << ": " << back.status().message();
    EXPECT_TRUE(back->bytes_equal(x)) << dtype_name(t);
  }
  Expected<Tensor> scalar = decode(encode_npy(Tensor::full(DType::kF32, {}, 2.5)));
  ASSERT_TRUE(scalar.has_value());
  EXPECT_EQ(scalar->shape(), Shape{});
  EXPECT_EQ(scalar->get(0), 2.5);
}

TEST(NpyDecode, accepts_numpy_variants) {
  // Keys in another order, double quotes, extra spaces, no trailing comma, no padding.
  Expected<Tensor> t = decode(make_npy(
      "{ \"shape\" : ( 2 , ) ,'fortran_order':False, 'descr': '<i1'}\n", {0xFF, 0x02}));
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(t->dtype(), DType::kI8);
  EXPECT_EQ(t->shape(), Shape{2});
  EXPECT_EQ(t->get(0), -1.0);
  // Version 2.0 and 3.0 carry a 4-byte header length.
  for (uint8_t major : {2, 3}) {
    t = decode(make_npy("{'descr': '<u1', 'fortran_order': False, 'shape': (1,)}", {7}, major));
    ASSERT_TRUE(t.has_value()) << t.status().message();
    EXPECT_EQ(t->dtype(), DType::kU8);
  }
  // One-byte types in any byte order; '<u2' is bfloat16 by convention.
  const std::pair<const char*, DType> kDescrs[] = {
      {"|i1", DType::kI8}, {"<u1", DType::kU8}, {"|u1", DType::kU8}, {"<b1", DType::kBool},
      {"|b1", DType::kBool}, {"<u2", DType::kBF16}, {"<f2", DType::kF16}, {"<f4", DType::kF32},
      {"<f8", DType::kF64}, {"<i4", DType::kI32}, {"<i8", DType::kI64}, {"<u8", DType::kU64}};
  for (const auto& [descr, dtype] : kDescrs) {
    const std::string header =
        std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1,), }";
    t = decode(make_npy(header, std::vector<uint8_t>(dtype_size(dtype), 0)));
    ASSERT_TRUE(t.has_value()) << descr << ": " << t.status().message();
    EXPECT_EQ(t->dtype(), dtype) << descr;
  }
}

TEST(NpyDecode, rejects_short_and_bad_magic) {
  expect_error({0x93, 'N', 'U', 'M', 'P'}, ".npy magic: file is 5 bytes");
  expect_error({}, ".npy magic");
  std::vector<uint8_t> bad = encode_npy(Tensor::zeros(DType::kU8, {1}));
  bad[5] = 'Z';
  expect_error(bad, ".npy magic: expected \\x93NUMPY, got '\\x93NUMPZ'");
}

TEST(NpyDecode, rejects_unsupported_version) {
  std::vector<uint8_t> npy = encode_npy(Tensor::zeros(DType::kU8, {1}));
  npy[6] = 4;
  expect_error(npy, ".npy version: unsupported version 4.0");
  npy[6] = 1;
  npy[7] = 1;
  expect_error(npy, "unsupported version 1.1");
}

TEST(NpyDecode, rejects_header_length_beyond_file) {
  std::vector<uint8_t> npy = encode_npy(Tensor::zeros(DType::kU8, {1}));
  npy[8] = 0xFF;
  npy[9] = 0xFF;
  expect_error(npy, ".npy header length: 65535 bytes from offset 10");
  expect_error({0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 1, 0}, ".npy header length: file is 10 bytes");
}

TEST(NpyDecode, rejects_header_that_is_not_the_dict) {
  expect_error(make_npy("[1, 2]\n", {}), ".npy header: not a dict literal");
  expect_error(make_npy("{'descr': '<f4' 'shape': (1,)}", {}), "expected ',' or '}'");
  expect_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", {}),
               "unexpected text after the dict");
  expect_error(make_npy("{'descr: '<f4'}", {}), "expected ':'");
  expect_error(make_npy("{'descr': '<f4", {}), "unterminated string");
  expect_error(make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", {}),
               "unexpected key 'x'");
  expect_error(make_npy("{'descr': '<f4', 'descr': '<f4'}", {}), "duplicate key 'descr'");
  expect_error(make_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", {}),
               "field 'descr': structured dtypes are not supported");
  expect_error(make_npy("{", {}), "a key: expected a quoted string");
}

TEST(NpyDecode, rejects_missing_keys) {
  expect_error(make_npy("{'descr': '<f4', 'fortran_order': False}", {}), "missing key 'shape'");
  expect_error(make_npy("{'shape': (), 'fortran_order': False}", {}), "missing key 'descr'");
  expect_error(make_npy("{'shape': (), 'descr': '<f4'}", {}), "missing key 'fortran_order'");
}

TEST(NpyDecode, rejects_unsupported_descr) {
  Expected<Tensor> t = decode(make_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", {0, 0, 0, 0}));
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.status().message(),
            "golden/x/inputs/gradY.npy: .npy header: field 'descr': unsupported dtype '>f4' (big-endian)");
  expect_error(make_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", {}),
               "field 'descr': unsupported dtype '<c8'");
  expect_error(make_npy("{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }", {}),
               "unsupported dtype '|f4'");
  expect_error(make_npy("{'descr': '<U10', 'fortran_order': False, 'shape': (1,), }", {}),
               "unsupported dtype '<U10'");
}

TEST(NpyDecode, rejects_fortran_order) {
  expect_error(make_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", {0, 0, 0, 0}),
               "field 'fortran_order': True (Fortran order) is not supported");
  expect_error(make_npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", {0, 0, 0, 0}),
               "field 'fortran_order': expected True or False, got '0'");
}

TEST(NpyDecode, rejects_bad_shape_tuples) {
  auto with_shape = [](const std::string& shape) {
    return make_npy("{'descr': '|u1', 'fortran_order': False, 'shape': " + shape + ", }", {});
  };
  expect_error(with_shape("(-1, 3)"), "field 'shape': extent -1 is negative");
  expect_error(with_shape("(2.5,)"), "field 'shape': extent '2.5' is not an integer");
  expect_error(with_shape("(a,)"), "extent 'a' is not an integer");
  expect_error(with_shape("(99999999999999999999,)"), "extent 99999999999999999999 overflows int64");
  // 2^32 * 2^32 = 2^64 elements cannot be addressed.
  expect_error(with_shape("(4294967296, 4294967296)"), "overflow the addressable size");
  // An empty tensor with extents whose product (zero aside) overflows is rejected as well.
  expect_error(with_shape("(0, 4294967296, 4294967296)"), "overflow the addressable size");
  expect_error(with_shape("(5)"), "'(5)' is an integer, not a tuple");
  expect_error(with_shape("[5]"), "field 'shape': expected a tuple");
  expect_error(with_shape("(5,,)"), "unexpected character ','");
  expect_error(with_shape("(5 6)"), "expected ',' or ')'");
  expect_error(make_npy("{'descr': '|u1', 'fortran_order': False, 'shape': (5,", {}), "unterminated tuple");
}

TEST(NpyDecode, rejects_wrong_data_size) {
  std::vector<uint8_t> npy = encode_npy(Tensor::zeros(DType::kF32, {2, 3}));
  std::vector<uint8_t> truncated(npy.begin(), npy.end() - 1);
  // (2, 3) float32: 6 * 4 = 24 bytes expected; 23 present.
  expect_error(truncated, ".npy data size: shape (2, 3) of '<f4' needs 24 bytes, file has 23 after the header (truncated)");
  npy.push_back(0);
  expect_error(npy, "needs 24 bytes, file has 25 after the header (trailing bytes)");
}

TEST(NpyDecode, never_crashes_on_truncations_or_mutations) {
  const std::vector<uint8_t> valid = encode_npy(Tensor::from_values(DType::kI32, {3, 2}, {1, 2, 3, 4, 5, 6}));
  for (size_t n = 0; n < valid.size(); ++n) {
    // Copy into an exactly sized buffer so AddressSanitizer sees any read past the end.
    std::vector<uint8_t> prefix(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(decode_npy(prefix.data(), prefix.size(), kOrigin).has_value()) << n;
  }
  std::mt19937 gen(1234);
  const char kInteresting[] = "{}(),:' \"-0123456789TrueFalse<|>\n\x00\xff";
  int decoded = 0;
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> m = valid;
    const int edits = 1 + static_cast<int>(gen() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = gen() % 128;  // the header, where the parser lives
      m[pos] = (gen() & 1) != 0 ? static_cast<uint8_t>(gen())
                                : static_cast<uint8_t>(kInteresting[gen() % (sizeof kInteresting - 1)]);
    }
    auto buffer = std::make_unique<uint8_t[]>(m.size());
    std::copy(m.begin(), m.end(), buffer.get());
    Expected<Tensor> t = decode_npy(buffer.get(), m.size(), kOrigin);
    if (t.has_value()) {
      ++decoded;
      EXPECT_EQ(static_cast<size_t>(t->numel()) * dtype_size(t->dtype()), t->nbytes());
    } else {
      EXPECT_EQ(t.status().code(), StatusCode::kParseError);
    }
  }
  EXPECT_GT(decoded, 0);  // padding-only edits keep the file valid
}

class NpyFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "opgate_npy_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const std::string& name : list()) ::unlink((dir_ + "/" + name).c_str());
    ::rmdir(dir_.c_str());
  }
  std::vector<std::string> list() const {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir_.c_str());
    if (d == nullptr) return names;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
    return names;
  }
  std::string dir_;
};

TEST_F(NpyFiles, write_then_read_leaves_no_temporary) {
  const std::string path = dir_ + "/x.npy";
  Tensor t = Tensor::from_values(DType::kBF16, {2}, {1.0, -3.5});
  ASSERT_TRUE(write_npy(path, t).is_ok());
  Expected<Tensor> back = read_npy(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_TRUE(back->bytes_equal(t));
  // Overwriting replaces the file in one step.
  ASSERT_TRUE(write_npy(path, Tensor::zeros(DType::kU8, {3})).is_ok());
  EXPECT_EQ(read_npy(path)->dtype(), DType::kU8);
  EXPECT_EQ(list(), std::vector<std::string>{"x.npy"});
}

TEST_F(NpyFiles, io_errors_name_the_path) {
  const std::string missing_dir = dir_ + "/no/such/dir/x.npy";
  Status s = write_file_atomic(missing_dir, "abc");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find(missing_dir), std::string::npos) << s.message();
  struct stat st;
  EXPECT_NE(::stat((dir_ + "/no").c_str(), &st), 0);  // parents are not created
  Expected<Tensor> r = read_npy(dir_ + "/absent.npy");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find("absent.npy"), std::string::npos);
  // A malformed file reports its own path as the origin.
  ASSERT_TRUE(write_file_atomic(dir_ + "/bad.npy", "not npy").is_ok());
  Expected<Tensor> bad = read_npy(dir_ + "/bad.npy");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.status().code(), StatusCode::kParseError);
  EXPECT_EQ(bad.status().message().rfind(dir_ + "/bad.npy: .npy magic", 0), 0u) << bad.status().message();
  Expected<std::string> text = read_file(dir_ + "/bad.npy");
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text, "not npy");
  EXPECT_EQ(read_file(dir_).status().code(), StatusCode::kIoError);  // a directory
}

}  // namespace
}  // namespace opgate
