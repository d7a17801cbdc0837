// `opgate merge`: combines the report folders of shards (or machines) into one report and one
// gate decision (DESIGN.md §8).
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/report.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {

void add_merge(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("merge", "Merge shard report folders into one report and gate decision");
  struct Opts {
    std::vector<std::string> inputs;
    std::string out;
    bool strict = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("reports", o->inputs, "Report folders written by `opgate run --shard i/N`")->required();
  cmd->add_option("--out", o->out, "Merged report folder")->required();
  cmd->add_flag("--strict", o->strict, "MISTRUSTED cases fail the gate");
  cmd->callback([o, &exit_code] {
    auto writer = ReportWriter::open(o->out, {{"merged_from", o->inputs}}, false);
    if (!writer) {
      exit_code = fail(writer.status());
      return;
    }
    std::set<std::string> seen;
    for (const auto& dir : o->inputs) {
      std::ifstream probe(dir + "/results.jsonl");
      if (!probe) {
        exit_code = fail(io_error(fmt::format("{}/results.jsonl: missing (not a report folder?)", dir)));
        return;
      }
      auto results = read_results(dir + "/results.jsonl");
      if (!results) {
        exit_code = fail(results.status());
        return;
      }
      for (auto& r : *results) {
        if (!seen.insert(r.id).second) {
          exit_code = fail(parse_error(fmt::format("{}: case '{}' also appears in an earlier report: overlapping shards?",
                                                   dir, r.id)));
          return;
        }
        // The failed/<id>.json of each shard carries the case; copy it instead of re-deriving it.
        if (verdict_fails(r.verdict, true)) {
          auto failed = read_file(dir + "/failed/" + r.id + ".json");
          if (failed) {
            try {
              r.case_json = nlohmann::json::parse(*failed);
              r.case_json.erase("result");
            } catch (const nlohmann::json::exception&) {
              r.case_json = nullptr;
            }
          }
        }
        Status st = writer->append(r);
        if (!st.is_ok()) {
          exit_code = fail(st);
          return;
        }
      }
    }
    Status st = writer->finish();
    if (!st.is_ok()) {
      exit_code = fail(st);
      return;
    }
    fmt::print("{}\nreport: {}\n", counts_line(writer->counts()), o->out);
    exit_code = gate_exit_code(writer->counts(), o->strict);
  });
}

}  // namespace opgate::cli
