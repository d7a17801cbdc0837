// Tests of the fuzz input format (fuzz/fuzz_input.h) and of reading libFuzzer logs
// (fuzz/libfuzzer_log.h): what `opgate fuzz` relies on to turn a crashing input into a case.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/op_registry.h"
#include "fuzz/fuzz_input.h"
#include "fuzz/libfuzzer_log.h"

namespace opgate::fuzz {
namespace {

const uint8_t* bytes_of(const std::string& s) { return reinterpret_cast<const uint8_t*>(s.data()); }

TEST(FuzzInput, generator_bytes_decode_deterministically_to_parsable_cases) {
  for (const OpInfo& op : all_ops()) {
    for (const std::string& input : {std::string(), std::string(40, '\x07'), std::string("\x01\xff\xfe abc", 7)}) {
      auto a = decode_input(op, bytes_of(input), input.size());
      auto b = decode_input(op, bytes_of(input), input.size());
      ASSERT_TRUE(a && b) << op.stem;
      EXPECT_EQ(case_to_json(*a), case_to_json(*b)) << op.stem;
      EXPECT_EQ(a->op, op.stem);
      EXPECT_TRUE(op.parse(a->params, a->tensors)) << op.stem << ": " << a->params.dump();
    }
  }
}

TEST(FuzzInput, fill_and_seed_come_first) {
  const OpInfo& op = all_ops().front();
  const std::string input("\x02\x34\x12", 3);  // 2 % 3 = adversarial, seed 0x1234
  auto c = decode_input(op, bytes_of(input), input.size());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->fill, FillMode::kAdversarial);
  EXPECT_EQ(c->seed, 0x1234u);
}

TEST(FuzzInput, case_text_round_trips_through_encode) {
  const OpInfo& op = all_ops().front();
  const std::string generated(24, '\x05');
  auto c = decode_input(op, bytes_of(generated), generated.size());
  ASSERT_TRUE(c);
  const std::string text = encode_case(*c);
  ASSERT_TRUE(is_case_text(bytes_of(text), text.size()));
  auto back = decode_input(op, bytes_of(text), text.size());
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(case_to_json(*back), case_to_json(*c));
}

TEST(FuzzInput, case_text_of_another_operator_or_two_cases_is_an_error_naming_the_input) {
  const OpInfo& op = all_ops().front();
  const std::string other = R"({"id": "x.y.f32", "op": "no_such_op", "params": {}})";
  auto c = decode_input(op, bytes_of(other), other.size());
  ASSERT_FALSE(c);
  EXPECT_NE(c.status().message().find("<fuzz input>"), std::string::npos);
}

TEST(FuzzInput, element_budget_saturates_and_skips_absent_tensors) {
  SpecMap specs;
  specs["a"] = TensorSpec{DType::kF32, {int64_t{1} << 40, int64_t{1} << 40}, true};
  EXPECT_EQ(total_elements(specs), INT64_MAX);
  specs["a"].present = false;
  specs["b"] = TensorSpec{DType::kF16, {3, 5}, true};
  specs["c"] = TensorSpec{DType::kF16, {0, 7}, true};
  EXPECT_EQ(total_elements(specs), 15);
}

TEST(FuzzInput, target_names) {
  EXPECT_EQ(target_name("npy"), "fuzz_npy");
  EXPECT_EQ(target_name("fuzz_case_json"), "fuzz_case_json");
  EXPECT_EQ(target_name(all_ops().front().short_name), "fuzz_" + all_ops().front().stem);
  EXPECT_EQ(target_name("nope"), "");
  EXPECT_EQ(target_op("fuzz_npy"), nullptr);
  EXPECT_EQ(target_name("results_jsonl"), "fuzz_results_jsonl");
  EXPECT_EQ(target_name("golden_folder"), "fuzz_golden_folder");
  EXPECT_EQ(all_target_names().size(), all_ops().size() + 5);
}

TEST(LibFuzzerLog, finding_kinds) {
  const std::string harness = "==opgate-fuzz== finding verdict-failed in fuzz_a: FAILED\n";
  EXPECT_EQ(finding_kind(harness + "==1== ERROR: libFuzzer: deadly signal", "crash-1"), "verdict-failed");
  EXPECT_EQ(finding_kind("==7==ERROR: AddressSanitizer: heap-buffer-overflow on address", "crash-1"),
            "asan-heap-buffer-overflow");
  EXPECT_EQ(finding_kind("/src/core/tensor.cpp:88:12: runtime error: load of value 7", "crash-1"), "ubsan-tensor-88");
  EXPECT_EQ(finding_kind("opgate: internal check failed at /src/core/npy.cpp:120: x: y", "crash-1"), "check-npy-120");
  EXPECT_EQ(finding_kind("terminate called after throwing an instance of 'nlohmann::detail::out_of_range'", "crash-1"),
            "exception-out-of-range");
  EXPECT_EQ(finding_kind("==3== ERROR: libFuzzer: timeout after 10 seconds", "timeout-1"), "timeout");
  EXPECT_EQ(finding_kind("", "oom-abc"), "oom");
}

}  // namespace
}  // namespace opgate::fuzz
