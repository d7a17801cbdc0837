// Shared by the golden folder tests (golden_test.cpp, golden_format2_test.cpp): a fresh golden
// folder of one smoke case in a temporary root, its manifest, and a line search.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/case.h"
#include "core/npy.h"
#include "cases/registry.h"
#include "harness/golden.h"
#include "harness/golden_folder.h"

namespace opgate::golden_testing {

inline bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

// SetUp regenerates case `id` of `op`'s smoke file into a new temporary root; TearDown removes it.
class GoldenFolderTest : public ::testing::Test {
 protected:
  GoldenFolderTest(std::string op, std::string id) : op_(std::move(op)), id_(std::move(id)) {}
  void SetUp() override {
    char tmpl[] = "/tmp/opgate_golden_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    auto cases = load_case_file(std::string(OPGATE_SOURCE_DIR) + "/cases/" + op_ + "/smoke.json");
    ASSERT_TRUE(cases) << cases.status().message();
    cases_ = *cases;
    for (const auto& c : cases_) {
      if (c.id == id_) case_ = c;
    }
    ASSERT_EQ(case_.id, id_);
    ASSERT_TRUE(regenerate_golden(root_, case_, "test").is_ok());
    dir_ = golden_case_dir(root_, op_, id_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  nlohmann::json manifest() const {
    return nlohmann::json::parse(read_file(dir_ + "/manifest.json").value());
  }
  void write_manifest(const nlohmann::json& m) const { std::ofstream(dir_ + "/manifest.json") << m.dump(); }

  const std::string op_, id_;
  std::string root_, dir_;
  std::vector<Case> cases_;
  Case case_;
};

}  // namespace opgate::golden_testing
