// `opgate gen` (seeded generated case files and their feature statistics) and `opgate shrink`
// (a failing case reduced to a minimal one that fails the same way).
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "cases/generate.h"
#include "harness/shrink.h"
#include "core/npy.h"
#include "cases/registry.h"
#include "tools/case_file.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {
namespace {

Status write_generated(const OpInfo& op, int64_t count, uint64_t seed, const std::string& size, const std::string& out) {
  OPGATE_ASSIGN_OR_RETURN(CaseFileStream stream, CaseFileStream::open(out));
  OPGATE_TRY(stream.header(op.stem, fmt::format("opgate gen --op {} --count {} --seed {} --size {}", op.stem, count,
                                                seed, size)));
  OPGATE_TRY(for_each_generated_case(op, count, seed, parse_size_class(size).value(), false, nullptr,
                                     [&](Case& c) { return stream.add(c); }));
  return stream.finish();
}

Status print_generated_stats(const OpInfo& op, int64_t count, uint64_t seed, const std::string& size) {
  FeatureStats stats;
  OPGATE_TRY(for_each_generated_case(op, count, seed, parse_size_class(size).value(), false, nullptr, [&](Case& c) {
    add_feature_stats(stats, c);
    return Status::ok();
  }));
  for (const auto& [feature, values] : stats) {
    std::string line;
    for (const auto& [value, n] : values) line += fmt::format("  {}:{}", value, n);
    fmt::print("{:<18}{}\n", feature, line);
  }
  return Status::ok();
}

}  // namespace

void add_gen(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("gen", "Write N generated cases of an operator (same seed, same file)");
  struct Opts {
    std::string op, size = "medium", tier_like, out;
    int64_t count = 20;
    uint64_t seed = 1;
    bool stats = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--op", o->op, "Operator stem, aclnn name or short name")->required();
  cmd->add_option("--count", o->count, "Number of cases")->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_option("--seed", o->seed, "Generator seed");
  cmd->add_option("--size", o->size, "Input-element budget: small (2^14), medium (2^20), large (2^26)")
      ->check(CLI::IsMember({"small", "medium", "large"}));
  cmd->add_option("--tier-like", o->tier_like, "Keep sizes within a tier's budget: smoke, ci or nightly")
      ->check(CLI::IsMember({"smoke", "ci", "nightly"}));
  cmd->add_option("--out", o->out, "Case file to write (default: standard output)");
  cmd->add_flag("--stats", o->stats, "Print how often each feature appears instead of the cases");
  cmd->callback([o, &exit_code] {
    auto resolved = resolve_op(o->op);
    if (!resolved) {
      exit_code = fail(resolved.status());
      return;
    }
    const OpInfo* op = *resolved;
    std::string size = o->size;
    if (o->tier_like == "smoke") size = "small";
    if (o->tier_like == "ci") size = "medium";
    if (o->tier_like == "nightly") size = "large";
    const Status st = o->stats ? print_generated_stats(*op, o->count, o->seed, size)
                               : write_generated(*op, o->count, o->seed, size, o->out);
    if (!st.is_ok()) exit_code = fail(st);
  });
}

void add_shrink(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("shrink", "Reduce a failing case to a minimal one that fails the same output check");
  struct Opts {
    std::string source, id, backend = "emu", out;
    double budget_s = 60;
    bool isolate = false;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("case", o->source, "A case file or a failed/<id>.json")->required();
  cmd->add_option("--id", o->id, "The case id within a case file");
  cmd->add_option("--backend", o->backend, "Backend the case fails on");
  cmd->add_option("--budget", o->budget_s, "Seconds to spend searching")->check(CLI::PositiveNumber);
  cmd->add_option("--out", o->out, "Where to write the minimal case (default <id>.min.json)");
  cmd->add_flag("--isolate", o->isolate, "Run candidates in child processes (for crashes and hangs)");
  cmd->callback([o, &exit_code] {
    auto cases = load_case_file(o->source);
    if (!cases) {
      exit_code = fail(cases.status());
      return;
    }
    const Case* chosen = nullptr;
    for (const auto& c : *cases) {
      if (o->id.empty() ? cases->size() == 1 : c.id == o->id) chosen = &c;
    }
    if (chosen == nullptr) {
      exit_code = fail(parse_error(fmt::format("{}: choose one case with --id", o->source)));
      return;
    }
    auto backend = make_backend(o->backend);
    if (!backend) {
      exit_code = fail(backend.status());
      return;
    }
    ShrinkOptions opt;
    opt.budget_s = o->budget_s;
    opt.run.isolate = o->isolate;
    auto shrunk = shrink_case(*chosen, **backend, opt);
    if (!shrunk) {
      exit_code = fail(shrunk.status());
      return;
    }
    Case minimal = shrunk->minimal;
    minimal.id = chosen->id + ".min";
    minimal.source.clear();
    minimal.tier.clear();
    const std::string out = o->out.empty() ? minimal.id + ".json" : o->out;
    if (Status st = write_case_file(out, minimal, "shrunk by opgate shrink from " + chosen->id); !st.is_ok()) {
      exit_code = fail(st);
      return;
    }
    // Absolute paths: the line is pasted into another shell, often in another directory.
    fmt::print("{}: {} -> {} input elements in {} steps, {} runs{}\nfails: {}\n{}\nrepro: {} repro {} --backend {}\n",
               chosen->id, shrunk->elements_before, shrunk->elements_after, shrunk->steps, shrunk->runs,
               shrunk->budget_exhausted ? " (budget exhausted)" : "", shrunk->signature,
               case_to_json(minimal).dump(), shell_quote(self_exe()), shell_quote(absolute_path(out)),
               shell_quote(o->backend));
  });
}

}  // namespace opgate::cli
