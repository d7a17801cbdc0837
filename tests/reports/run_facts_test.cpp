// The run facts: times by hand arithmetic (a day is 86400 s), merges by their definition.
#include "reports/run_facts.h"

#include "reports/report_banner.h"

#include <gtest/gtest.h>

namespace opgate {
namespace {

TEST(RunFacts, iso_times_round_trip_by_hand_arithmetic) {
  EXPECT_EQ(parse_iso_utc("1970-01-02T00:00:00Z"), 86400);
  EXPECT_EQ(iso_utc(86400 + 3600 + 60 + 1), "1970-01-02T01:01:01Z");
  EXPECT_EQ(parse_iso_utc(iso_utc(1796000000)), 1796000000);
  for (const char* bad : {"", "2026-12-07", "2026-12-07T09:00:00", "2026-12-07T09:00:00+01:00", "yesterday"}) {
    EXPECT_EQ(parse_iso_utc(bad), -1) << bad;
  }
}

TEST(RunFacts, the_end_gives_the_duration_and_a_resume_moves_the_end) {
  nlohmann::json info{{"started_at", "2026-12-07T09:00:00Z"}};
  add_end_facts(info, parse_iso_utc("2026-12-07T09:02:05Z"));
  EXPECT_EQ(info["finished_at"], "2026-12-07T09:02:05Z");
  EXPECT_EQ(info["duration_s"], 125);
  add_end_facts(info, parse_iso_utc("2026-12-07T10:00:00Z"));  // resumed: the span grows
  EXPECT_EQ(info["duration_s"], 3600);
}

TEST(RunFacts, a_merge_spans_its_shards_and_lists_every_host_once) {
  const std::vector<nlohmann::json> shards = {
      {{"started_at", "2026-12-07T09:00:00Z"}, {"finished_at", "2026-12-07T09:10:00Z"}, {"host", "a"},
       {"kernel_rev", "r1"}},
      {{"started_at", "2026-12-07T08:30:00Z"}, {"finished_at", "2026-12-07T09:20:00Z"}, {"host", "b"},
       {"kernel_rev", "r1"}},
      {{"started_at", "2026-12-07T08:45:00Z"}, {"finished_at", "2026-12-07T08:50:00Z"}, {"host", "a"}}};
  nlohmann::json merged{{"merged_from", {"x", "y", "z"}}};
  add_merged_facts(merged, shards);
  EXPECT_EQ(merged["started_at"], "2026-12-07T08:30:00Z");
  EXPECT_EQ(merged["finished_at"], "2026-12-07T09:20:00Z");
  EXPECT_EQ(merged["duration_s"], 50 * 60);
  EXPECT_EQ(merged["hosts"], nlohmann::json({"a", "b"}));
  EXPECT_EQ(merged["kernel_rev"], "r1");
  add_end_facts(merged, parse_iso_utc("2030-01-01T00:00:00Z"));  // finishing the merge keeps the span
  EXPECT_EQ(merged["finished_at"], "2026-12-07T09:20:00Z");
  EXPECT_EQ(hosts_text(merged), "a,b");
}

TEST(RunFacts, cann_and_soc_are_the_probes_or_an_honest_na) {
  const nlohmann::json emu{{"backend", {{"backend", "emu"}}}};
  EXPECT_EQ(cann_text(emu), "n/a");
  EXPECT_EQ(soc_text(emu), "n/a");
  const nlohmann::json npu{{"backend", {{"backend", "ascend"}, {"soc", "Ascend910B3"}, {"cann_version", "8.0.RC3"}}}};
  EXPECT_EQ(cann_text(npu), "8.0.RC3");
  EXPECT_EQ(soc_text(npu), "Ascend910B3");
}

TEST(RunFacts, the_banner_names_the_backend_once_beside_cann_and_soc_na) {
  const nlohmann::json info{{"backend", {{"backend", "fault:mfrg.k_major_index"}}}};
  const std::string banner = report_banner(info, VerdictCounts{});
  EXPECT_NE(banner.find("fault:mfrg.k_major_index · CANN n/a · SoC n/a"), std::string::npos) << banner;
  const size_t first = banner.find("fault:mfrg.k_major_index");
  EXPECT_EQ(banner.find("fault:mfrg.k_major_index", first + 1), std::string::npos) << banner;
}

TEST(RunFacts, the_summary_lines_say_when_where_and_what_without_json) {
  const nlohmann::json info{{"started_at", "2026-12-07T09:00:00Z"}, {"finished_at", "2026-12-07T09:00:42Z"},
                            {"duration_s", 42}, {"host", "node7"}, {"kernel_rev", "deadbeef"},
                            {"harness_version", "0.1.0+gabc"}, {"backend", {{"backend", "emu"}}},
                            {"selection", {{"tiers", {"ci"}}, {"ops", {"moe_ffn"}}, {"filter", "k=8"}}}};
  const std::string s = facts_lines(info);
  EXPECT_EQ(s, "started 2026-12-07T09:00:00Z, finished 2026-12-07T09:00:42Z (42 s) on node7\n"
               "kernel rev deadbeef · CANN n/a · SoC n/a · harness 0.1.0+gabc\n"
               "selection: tier ci · ops moe_ffn · filter k=8\n");
  EXPECT_EQ(run_date(info), "2026-12-07");
  EXPECT_EQ(facts_lines(nlohmann::json::object()).find('{'), std::string::npos);
}

}  // namespace
}  // namespace opgate
