// Golden folders made from a real smoke case, then damaged one way at a time: read_golden refuses
// files that differ from their digest, verify_golden names each cause, and a run against golden
// cross-checks the recomputed reference.
#include "harness/golden.h"
#include "harness/golden_folder.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/harness/golden_testing.h"

#include "core/backend.h"
#include "core/npy.h"
#include "harness/runner.h"

namespace opgate {
namespace {

const char kOp[] = "moe_finalize_routing_v2_grad";
const char kId[] = "mfrg.scales_dropless.f16.001";

using golden_folder::sha256_hex;

using golden_testing::mentions;

class Golden : public golden_testing::GoldenFolderTest {
 protected:
  Golden() : GoldenFolderTest(kOp, kId) {}
  // Rewrites expected/gradScalesOut.npy with its last element changed by `delta`; with
  // `fix_digest` the manifest is updated too, so only recomputation can tell.
  void change_expected(double delta, bool fix_digest) const {
    const std::string rel = "expected/gradScalesOut.npy";
    Tensor t = read_npy(dir_ + "/" + rel).value();
    t.set(t.numel() - 1, t.get(t.numel() - 1) + delta);
    ASSERT_TRUE(write_npy(dir_ + "/" + rel, t).is_ok());
    if (!fix_digest) return;
    nlohmann::json m = manifest();
    m["tensors"][rel]["sha256"] = sha256_hex(read_file(dir_ + "/" + rel).value());
    write_manifest(m);
  }

};

TEST_F(Golden, a_fresh_folder_reads_and_verifies) {
  auto g = read_golden(dir_);
  ASSERT_TRUE(g) << g.status().message();
  EXPECT_TRUE(g->expected.count("gradScalesOut"));
  EXPECT_TRUE(g->care.count("gradScalesOut"));
  EXPECT_TRUE(g->inputs.count("gradY"));
  const GoldenCheck check = verify_golden(dir_, cases_);
  EXPECT_TRUE(check.ok) << check.cause;
}

TEST_F(Golden, read_golden_refuses_a_file_that_differs_from_its_digest) {
  change_expected(0.5, false);
  auto g = read_golden(dir_);
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find(dir_ + "/expected/gradScalesOut.npy: sha256 differs"), std::string::npos)
      << g.status().message();
  const GoldenCheck check = verify_golden(dir_, cases_);
  EXPECT_EQ(check.cause, "file corrupted");
}

TEST_F(Golden, consistent_but_wrong_values_are_a_reference_change) {
  change_expected(0.5, true);
  EXPECT_TRUE(read_golden(dir_));
  const GoldenCheck check = verify_golden(dir_, cases_);
  EXPECT_EQ(check.cause, "reference changed");
  EXPECT_TRUE(mentions(check.details, "expected/gradScalesOut.npy: recomputed values differ: 1 of 12"))
      << check.details[0];
}

TEST_F(Golden, an_edited_case_is_a_case_change_naming_the_field) {
  for (auto& c : cases_) {
    if (c.id == kId) c.params["H"] = 64;
  }
  const GoldenCheck check = verify_golden(dir_, cases_);
  EXPECT_EQ(check.cause, "case changed");
  EXPECT_TRUE(mentions(check.details, "params.H: golden 32, case file 64"));
  EXPECT_EQ(check.causes.size(), 1u);  // the golden files still match their own case.json
}

TEST_F(Golden, a_case_no_case_file_holds_is_removed) {
  std::vector<Case> others;
  for (const auto& c : cases_) {
    if (c.id != kId) others.push_back(c);
  }
  const GoldenCheck check = verify_golden(dir_, others);
  EXPECT_EQ(check.cause, "case removed");
}

TEST_F(Golden, the_manifest_must_belong_to_its_folder) {
  const std::vector<std::pair<std::string, nlohmann::json>> edits{
      {"case_id", "zzz"}, {"op", "MoeFfn"}, {"format", 3}, {"reference_version", "1"}};
  const nlohmann::json clean = manifest();
  for (const auto& [field, value] : edits) {
    nlohmann::json m = clean;
    m[field] = value;
    write_manifest(m);
    const GoldenCheck check = verify_golden(dir_, cases_);
    EXPECT_EQ(check.cause, "file corrupted") << field;
    EXPECT_TRUE(mentions(check.details, fmt::format("manifest.json: field '{}'", field))) << field;
    auto g = read_golden(dir_);
    ASSERT_FALSE(g) << field;
    EXPECT_NE(g.status().message().find(fmt::format("field '{}'", field)), std::string::npos) << field;
  }
}

TEST_F(Golden, another_reference_version_is_a_reference_change) {
  nlohmann::json m = manifest();
  m["reference_version"] = 99;
  write_manifest(m);
  const GoldenCheck check = verify_golden(dir_, cases_);
  EXPECT_EQ(check.cause, "reference changed");
  EXPECT_TRUE(mentions(check.details, "reference_version 99, the current reference is version"));
}

TEST_F(Golden, a_manifest_listing_no_tensors_is_corrupted) {
  nlohmann::json m = manifest();
  m["tensors"] = nlohmann::json::object();
  write_manifest(m);
  const GoldenCheck check = verify_golden(dir_, cases_);
  EXPECT_EQ(check.cause, "file corrupted");
  EXPECT_TRUE(mentions(check.details, "lists no inputs/<name>.npy"));
  EXPECT_TRUE(mentions(check.details, "inputs/gradY.npy: not listed in manifest.json"));
  EXPECT_FALSE(read_golden(dir_));
}

TEST_F(Golden, manifest_paths_stay_inside_the_folder) {
  nlohmann::json m = manifest();
  m["tensors"]["inputs/../../../etc/passwd.npy"] = {{"sha256", "0"}};
  write_manifest(m);
  EXPECT_EQ(verify_golden(dir_, cases_).cause, "file corrupted");
  EXPECT_FALSE(read_golden(dir_));
}

TEST(GoldenValues, agree_up_to_a_few_double_ulps) {
  // 2 and the next double above it differ by one ulp (2^-51): libm noise, not a change.
  const Tensor a = Tensor::from_values(DType::kF64, {2}, {1.0, 2.0});
  const Tensor b = Tensor::from_values(DType::kF64, {2}, {1.0, 2.0 + 0x1p-51});
  const Tensor c = Tensor::from_values(DType::kF64, {2}, {1.0, 2.5});
  EXPECT_EQ(golden_values_differ(a, b), "");
  EXPECT_EQ(golden_values_differ(a, c), "1 of 2 elements differ, first at index [1]: golden 2, reference 2.5");
  EXPECT_EQ(golden_values_differ(a, Tensor::from_values(DType::kF64, {1}, {1.0})), "shape [2] vs [1]");
}

TEST_F(Golden, a_run_against_a_format_1_golden_cross_checks_the_reference) {
  auto emu = make_backend("emu");
  ASSERT_TRUE(emu);
  RunOptions opt;
  opt.against_golden = true;
  opt.golden_root = root_;
  // Format 1: no magnitude files, so the run recomputes the reference and compares it with golden.
  nlohmann::json m = manifest();
  m["format"] = 1;
  m["tensors"].erase("expected/gradScalesOut.mag.npy");
  std::filesystem::remove(dir_ + "/expected/gradScalesOut.mag.npy");
  write_manifest(m);
  EXPECT_EQ(run_case(case_, **emu, opt).verdict, Verdict::kPassed);
  change_expected(0.5, true);
  const CaseResult r = run_case(case_, **emu, opt);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason.rfind("golden and reference disagree: gradScalesOut (1 of 12 elements differ", 0), 0u) << r.reason;
}

TEST_F(Golden, a_run_against_a_format_2_golden_compares_the_device_with_the_golden_values) {
  auto emu = make_backend("emu");
  ASSERT_TRUE(emu);
  RunOptions opt;
  opt.against_golden = true;
  opt.golden_root = root_;
  change_expected(0.5, true);  // no reference runs to disagree: the device now misses the golden value
  const CaseResult r = run_case(case_, **emu, opt);
  EXPECT_EQ(r.verdict, Verdict::kFailed);
  EXPECT_EQ(r.reason.rfind("gradScalesOut: 1 of 12 compared elements outside exact", 0), 0u) << r.reason;
}

TEST_F(Golden, a_run_against_golden_refuses_a_case_changed_since_regen) {
  auto emu = make_backend("emu");
  ASSERT_TRUE(emu);
  RunOptions opt;
  opt.against_golden = true;
  opt.golden_root = root_;
  Case edited = case_;
  edited.params["H"] = 64;  // the golden folder was made with H = 32
  const CaseResult r = run_case(edited, **emu, opt);
  EXPECT_EQ(r.verdict, Verdict::kInvalidCase);
  EXPECT_EQ(r.reason, "case changed since golden regen: params.H (golden 32, now 64); run `opgate golden regen`");
  // An edit that leaves every output alone is still a different case than the one frozen.
  edited = case_;
  edited.note = "reworded";
  EXPECT_EQ(run_case(edited, **emu, opt).reason.rfind("case changed since golden regen: note (golden absent", 0), 0u);
}

TEST(GoldenCase, differences_name_each_leaf_field) {
  const nlohmann::json a{{"id", "x"}, {"params", {{"H", 32}, {"R", 2}}}, {"seed", 1}};
  const nlohmann::json b{{"id", "x"}, {"params", {{"H", 64}, {"R", 2}}}, {"note", "n"}};
  const std::vector<CaseFieldDiff> d = case_differences(a, b);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].field, "note");
  EXPECT_EQ(d[0].before, "absent");
  EXPECT_EQ(d[1].field, "params.H");
  EXPECT_EQ(d[1].after, "64");
  EXPECT_EQ(d[2].field, "seed");
  EXPECT_EQ(d[2].after, "absent");
  EXPECT_TRUE(case_differences(a, a).empty());
}

TEST_F(Golden, stale_folders_are_removed_and_kept_ones_stay) {
  ASSERT_TRUE(make_dirs(golden_case_dir(root_, kOp, "mfrg.gone.f16.001")).is_ok());
  auto removed = remove_stale_golden(root_, kOp, {kId});
  ASSERT_TRUE(removed) << removed.status().message();
  ASSERT_EQ(removed->size(), 1u);
  EXPECT_EQ((*removed)[0], golden_case_dir(root_, kOp, "mfrg.gone.f16.001"));
  EXPECT_EQ(list_golden_dirs(root_), std::vector<std::string>{dir_});
}

TEST_F(Golden, a_run_against_a_corrupted_golden_is_no_device_verdict) {
  auto emu = make_backend("emu");
  ASSERT_TRUE(emu);
  RunOptions opt;
  opt.against_golden = true;
  opt.golden_root = root_;
  change_expected(0.5, false);
  const CaseResult r = run_case(case_, **emu, opt);
  EXPECT_EQ(r.verdict, Verdict::kInvalidCase);
  EXPECT_NE(r.reason.find("gradScalesOut.npy: sha256 differs"), std::string::npos) << r.reason;
}

}  // namespace
}  // namespace opgate

namespace opgate {
namespace {

TEST_F(Golden, stray_and_temporary_files_are_named_and_do_not_stop_verification) {
  std::ofstream(dir_ + "/notes.txt") << "hello";
  std::ofstream(dir_ + "/inputs/gradY.npy.tmp.123.0") << "x";
  std::ofstream(dir_ + "/expected/readme") << "x";
  const std::vector<std::string> strays = stray_golden_files(dir_);
  ASSERT_EQ(strays.size(), 3u);
  EXPECT_EQ(strays[0].rfind(dir_ + "/expected/readme: stray file", 0), 0u) << strays[0];
  EXPECT_EQ(strays[1], dir_ + "/inputs/gradY.npy.tmp.123.0: temporary file of an interrupted write");
  EXPECT_EQ(strays[2].rfind(dir_ + "/notes.txt: stray file", 0), 0u) << strays[2];
  const GoldenCheck check = verify_golden(dir_, cases_);
  EXPECT_EQ(check.cause, "stray file");
  EXPECT_EQ(check.causes.size(), 1u);  // the tensors still verify
  EXPECT_TRUE(read_golden(dir_));      // a run is not blocked by them
}

TEST_F(Golden, an_interrupted_swap_is_found_and_moved_back_once_its_process_is_gone) {
  // pid 2^31-1 never runs (pid_max is at most 2^22).
  const std::string aside = fmt::format("{}/{}/.{}.old.2147483647", root_, kOp, kId);
  ASSERT_EQ(rename(dir_.c_str(), aside.c_str()), 0);
  const std::string half = fmt::format("{}/{}/.{}.tmp.2147483647", root_, kOp, kId);
  std::filesystem::create_directories(half);
  const auto found = find_golden_leftovers(root_, kOp);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].path, aside);
  EXPECT_TRUE(found[0].old);
  EXPECT_EQ(found[0].id, kId);
  EXPECT_EQ(found[0].pid, 2147483647);
  EXPECT_FALSE(found[0].owner_running);
  EXPECT_EQ(found[1].path, half);
  EXPECT_FALSE(found[1].old);
  EXPECT_TRUE(list_golden_dirs(root_, kOp).empty());
  const auto lines = clean_golden_leftovers(root_, kOp);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("recovered " + dir_ + " from " + aside, 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("removed leftover " + half, 0), 0u) << lines[1];
  EXPECT_TRUE(find_golden_leftovers(root_, kOp).empty());
  EXPECT_TRUE(verify_golden(dir_, cases_).ok);
}

TEST_F(Golden, a_leftover_of_a_running_regen_is_left_alone) {
  const std::string aside = fmt::format("{}/{}/.{}.old.{}", root_, kOp, "mfrg.other.f16.001", getppid());
  std::filesystem::create_directories(aside);
  const auto lines = clean_golden_leftovers(root_, kOp);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("skipped " + aside + ": the regen that made it", 0), 0u) << lines[0];
  EXPECT_TRUE(std::filesystem::exists(aside));
}

TEST_F(Golden, an_endless_tensor_file_is_corrupted_not_read_whole) {
  const std::string npy = dir_ + "/inputs/gradY.npy";
  std::filesystem::remove(npy);
  std::filesystem::create_symlink("/dev/zero", npy);
  set_max_case_bytes(uint64_t{1} << 20);
  auto g = read_golden(dir_);
  set_max_case_bytes(0);
  ASSERT_FALSE(g);
  EXPECT_NE(g.status().message().find(npy + ": more than 1.0 MiB, over --max-case-bytes"), std::string::npos)
      << g.status().message();
}

TEST_F(Golden, a_deep_or_duplicated_case_json_is_unreadable_naming_the_limit) {
  std::ofstream(dir_ + "/case.json") << std::string(100000, '[') << std::string(100000, ']');
  GoldenCheck deep = verify_golden(dir_, cases_);
  EXPECT_EQ(deep.cause, "unreadable");
  EXPECT_TRUE(mentions(deep.details, "nested deeper than 64 levels")) << deep.details[0];
  std::ofstream(dir_ + "/case.json") << R"({"id": "x", "id": "y"})";
  GoldenCheck dup = verify_golden(dir_, cases_);
  EXPECT_TRUE(mentions(dup.details, "duplicate key 'id'")) << dup.details[0];
}

}  // namespace
}  // namespace opgate
