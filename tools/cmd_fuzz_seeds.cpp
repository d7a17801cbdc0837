// `opgate fuzz-seeds`: writes the seed corpus of fuzz targets (style-and-layout.md B9, B11) into
// fuzz/corpus/fuzz_<name>/, one file per input named by content hash. An operator gets a diverse
// handful of its smoke and ci cases as case text plus a few generator byte strings; fuzz_case_json
// gets small case files, fuzz_npy small .npy files of every dtype, fuzz_results_jsonl result lines.
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/npy.h"
#include "core/report_folder.h"
#include "fuzz/fuzz_input.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {
namespace {

struct SeedOpts {
  std::vector<std::string> names;
  std::vector<std::string> tiers = {"smoke", "ci"};
  std::string root, out;
  int max_cases = 16;
  int generator_seeds = 4;
  bool replace = false;
};

// Cases within the fuzz element budget, first one per feature signature (dtype, fill, expect and
// which boolean params are on), then the rest in file order, up to `max`.
std::vector<Case> pick_cases(const std::vector<Case>& cases, int max, int& skipped) {
  std::vector<const Case*> fit;
  for (const Case& c : cases) {
    auto problem = make_problem(c);
    if (problem && (*problem)->validate().is_ok() &&
        (fuzz::total_elements((*problem)->specs()) > fuzz::max_elements() ||
         fuzz::total_elements((*problem)->output_images()) > fuzz::max_elements())) {
      ++skipped;
      continue;
    }
    fit.push_back(&c);
  }
  std::vector<Case> out;
  std::set<std::string> signatures;
  std::set<const Case*> taken;
  for (int pass = 0; pass < 2; ++pass) {
    for (const Case* c : fit) {
      if (static_cast<int>(out.size()) >= max || taken.count(c)) continue;
      std::string sig = fmt::format("{}|{}|{}", c->params.value("dtype", nlohmann::json()).dump(),
                                    fill_mode_name(c->fill), c->expect);
      for (auto it = c->params.begin(); it != c->params.end(); ++it) {
        if (it->is_boolean() && it->get<bool>()) sig += "|" + it.key();
      }
      if (pass == 0 && !signatures.insert(sig).second) continue;
      taken.insert(c);
      out.push_back(*c);
    }
  }
  return out;
}

std::vector<std::string> op_seeds(const OpInfo& op, const SeedOpts& o, const std::string& root, int& skipped) {
  std::vector<Case> cases;
  for (const auto& tier : o.tiers) {
    const std::string path = fmt::format("{}/cases/{}/{}.json", root, op.stem, tier);
    if (!std::filesystem::exists(path)) continue;
    auto loaded = load_case_file(path);
    if (!loaded) throw std::runtime_error(loaded.status().message());
    cases.insert(cases.end(), loaded->begin(), loaded->end());
  }
  std::vector<std::string> seeds;
  for (const Case& c : pick_cases(cases, o.max_cases, skipped)) seeds.push_back(fuzz::encode_case(c));
  for (int k = 1; k <= o.generator_seeds; ++k) {
    const CounterRng rng(static_cast<uint64_t>(k), "fuzz-seeds");
    std::string bytes(64, '\0');
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(rng.bits(i) & 0xff);
    if (bytes[0] == '{') bytes[0] = 0;  // generator mode, not case text
    seeds.push_back(bytes);
  }
  return seeds;
}

std::vector<std::string> case_json_seeds(const std::string& root) {
  std::vector<std::string> seeds;
  for (const OpInfo& op : all_ops()) {
    for (const char* tier : {"smoke", "invalid"}) {
      auto text = read_file(fmt::format("{}/cases/{}/{}.json", root, op.stem, tier));
      if (!text) continue;
      if (text->size() <= 2048) seeds.push_back(*text);
      auto cases = parse_cases_text(*text, tier);
      if (cases && !cases->empty()) seeds.push_back(fuzz::encode_case(cases->front()));
    }
  }
  return seeds;
}

// fuzz_golden_folder reads case.json, a NUL byte, then manifest.json, written into the folder of one
// fixed case (fuzz/fuzz_golden_folder.cpp): the checked-in golden folder of that case is the seed.
std::vector<std::string> golden_folder_seeds(const std::string& root) {
  const std::string dir = root + "/golden/moe_finalize_routing_v2_grad/mfrg.copy_no_scales.f32.001";
  auto case_text = read_file(dir + "/case.json");
  auto manifest_text = read_file(dir + "/manifest.json");
  if (!case_text || !manifest_text) return {};
  return {*case_text + std::string(1, '\0') + *manifest_text};
}

std::vector<std::string> results_seeds() {
  CaseResult passed;
  passed.id = "mfrg.copy_no_scales.f32.001";
  passed.op = "moe_finalize_routing_v2_grad";
  passed.backend = "emu";
  passed.reason = "all outputs match";
  CaseResult failed = passed;
  failed.verdict = Verdict::kFailed;
  failed.reason = "gradScalesOut: 1 of 8 compared elements outside bound";
  OutputResult output;
  output.plan.name = output.compare.name = "gradScalesOut";
  output.compare.passed = false;
  failed.outputs.push_back(output);
  failed.case_json = {{"id", passed.id}, {"op", passed.op}, {"params", {{"R", 4}}}};
  const std::string a = to_json(passed).dump(), b = to_json(failed).dump();
  return {a + "\n", a + "\n" + b + "\n", b + "\n" + b.substr(0, b.size() / 2)};
}

std::vector<std::string> npy_seeds() {
  std::vector<std::string> seeds;
  const std::vector<Shape> shapes = {{2, 3}, {}, {0, 4}, {1, 1, 2}};
  for (DType t : {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kI8, DType::kU8, DType::kI32,
                  DType::kI64, DType::kU64, DType::kBool}) {
    for (size_t s = 0; s < (t == DType::kF32 ? shapes.size() : 1); ++s) {
      Tensor x = Tensor::zeros(t, shapes[s]);
      for (int64_t i = 0; i < x.numel(); ++i) x.set(i, t == DType::kBool ? static_cast<double>(i % 2) : 0.5 * i - 1);
      const std::vector<uint8_t> bytes = encode_npy(x);
      seeds.emplace_back(bytes.begin(), bytes.end());
    }
  }
  return seeds;
}

int write_seeds(const SeedOpts& o) {
  const std::string root = repo_root(o.root);
  const std::string out_root = o.out.empty() ? root + "/fuzz/corpus" : o.out;
  std::vector<std::string> targets;
  for (const auto& name : o.names) {
    const std::string t = fuzz::target_name(name);
    if (t.empty()) {
      return fail(fuzz::unknown_target(name));
    }
    targets.push_back(t);
  }
  if (targets.empty()) targets = fuzz::all_target_names();
  for (const auto& target : targets) {
    std::vector<std::string> seeds;
    int skipped = 0;
    try {
      if (const OpInfo* op = fuzz::target_op(target)) {
        seeds = op_seeds(*op, o, root, skipped);
      } else {
        seeds = target == "fuzz_npy"             ? npy_seeds()
                : target == "fuzz_results_jsonl" ? results_seeds()
                : target == "fuzz_golden_folder" ? golden_folder_seeds(root)
                                                 : case_json_seeds(root);
      }
    } catch (const std::runtime_error& e) {
      return fail(parse_error(e.what()));
    }
    const std::filesystem::path dir = std::filesystem::path(out_root) / target;
    std::error_code ec;
    if (o.replace) std::filesystem::remove_all(dir, ec);
    std::filesystem::create_directories(dir, ec);
    if (ec) return fail(io_error(fmt::format("{}: cannot create: {}", dir.string(), ec.message())));
    size_t bytes = 0;
    for (const auto& s : seeds) {
      Status st = write_file_atomic((dir / fuzz::content_name(s)).string(), s);
      if (!st.is_ok()) return fail(st);
      bytes += s.size();
    }
    fmt::print("{}: {} seed(s), {} bytes -> {}{}\n", target, seeds.size(), bytes, dir.string(),
               skipped ? fmt::format(" ({} case(s) over the fuzz element budget left out)", skipped) : "");
  }
  return 0;
}

}  // namespace

void add_fuzz_seeds(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("fuzz-seeds", "Write fuzz seed corpora from smoke and ci cases (and parser samples)");
  auto o = std::make_shared<SeedOpts>();
  cmd->add_option("--op", o->names, "Operator or parser target (case_json, npy, results_jsonl); default: all");
  cmd->add_option("--tier", o->tiers, "Case tiers to encode (default: smoke ci)");
  cmd->add_option("--max-cases", o->max_cases, "Cases per operator (diverse first)")->check(CLI::Range(0, 10000));
  cmd->add_option("--generator-seeds", o->generator_seeds, "Random generator inputs per operator")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--out", o->out, "Corpus root (default <root>/fuzz/corpus)");
  cmd->add_option("--root", o->root, "Repository root holding cases/");
  cmd->add_flag("--replace", o->replace, "Delete each target's corpus folder first");
  cmd->callback([o, &exit_code] { exit_code = write_seeds(*o); });
}

}  // namespace opgate::cli
