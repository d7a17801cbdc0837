// `opgate list`: operators, defects, and the expanded cases with their effective params; with
// --json the same as one JSON object for scripts.
#include <filesystem>

#include <fmt/format.h>

#include "cases/param_docs.h"
#include "cases/registry.h"
#include "harness/backends.h"
#include "tools/cli_common.h"
#include "tools/commands.h"

namespace opgate::cli {
namespace {

nlohmann::json ops_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& op : all_ops()) {
    out.push_back({{"stem", op.stem},
                   {"aclnn_name", "aclnn" + op.aclnn_name},
                   {"short_name", op.short_name},
                   {"reference_version", op.reference_version}});
  }
  return out;
}

// A defect's name starts with its operator's short name ("mfrg.k_major_index").
nlohmann::json defects_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : all_defects()) {
    const OpInfo* op = find_op(d.name.substr(0, d.name.find('.')));
    out.push_back({{"name", d.name},
                   {"backend", "fault:" + d.name},
                   {"op", op != nullptr ? nlohmann::json(op->stem) : nlohmann::json()},
                   {"description", d.description}});
  }
  return out;
}

// The case as its file holds it (case_to_json), where it came from, and the params every default
// resolved (what the run uses).
nlohmann::json case_json(const Case& c, const Problem& problem) {
  nlohmann::json j = case_to_json(c);
  j["tier"] = c.tier;
  j["source"] = c.source;
  j["index"] = c.index;
  j["effective_params"] = problem.params_json();
  return j;
}

// `list --params-of <op> [--markdown]`: the operator's table of accepted case params.
int print_param_docs(const std::string& op, bool markdown) {
  if (op.empty()) return fail(parse_error("--markdown goes with --params-of <op>"));
  const std::vector<ParamDoc>* docs = param_docs_of(op);
  if (docs == nullptr) {
    return fail(parse_error(fmt::format("--params-of: unknown operator '{}' (known: {})", op, known_ops_text())));
  }
  fmt::print("{}", param_docs_text(*docs, markdown));
  return 0;
}

}  // namespace

void add_list(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("list", "List operators, defects, or the cases a selection expands to");
  struct Opts {
    Selection sel;
    std::string root;
    bool ops = false, defects = false, params = false, json = false, markdown = false;
    std::string params_of;
  };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--op", o->sel.ops, "Operator stem, aclnn name or short name");
  cmd->add_option("--tier", o->sel.tiers, "Case tier(s): smoke, ci, nightly, regression, invalid");
  cmd->add_option("--cases", o->sel.files, "Case file(s) instead of --op/--tier");
  cmd->add_option("--filter", o->sel.filter, "Regex on case id or tag");
  add_shard_flags(cmd, o->sel);
  cmd->add_option("--root", o->root, "Repository root holding cases/ and golden/");
  cmd->add_flag("--ops", o->ops, "List the operators");
  cmd->add_flag("--defects", o->defects, "List the fault backend's defects");
  cmd->add_flag("--params", o->params, "Print each case's effective params");
  cmd->add_option("--params-of", o->params_of,
                  "Print the case params an operator accepts: key, type, default, meaning (its code's table)");
  cmd->add_flag("--markdown", o->markdown, "With --params-of: as the Markdown table of the operator's README");
  cmd->add_flag("--json", o->json,
                "One JSON object: {\"ops\": [...]} with --ops, {\"defects\": [...]} with --defects, else the "
                "ops, the defects and the selected cases with every field");
  cmd->callback([o, &exit_code] {
    if (!o->params_of.empty() || o->markdown) {
      exit_code = print_param_docs(o->params_of, o->markdown);
      return;
    }
    if (o->json && (o->ops || o->defects)) {
      nlohmann::json j = nlohmann::json::object();
      if (o->ops) j["ops"] = ops_json();
      if (o->defects) j["defects"] = defects_json();
      fmt::print("{}\n", j.dump(2));
      return;
    }
    if (o->ops) {
      for (const auto& op : all_ops()) {
        fmt::print("{:<32} aclnn{:<28} {:<6} reference v{}\n", op.stem, op.aclnn_name, op.short_name,
                   op.reference_version);
      }
      return;
    }
    if (o->defects) {
      for (const auto& d : all_defects()) fmt::print("fault:{:<44} {}\n", d.name, d.description);
      return;
    }
    if (o->sel.tiers.empty() && o->sel.files.empty()) o->sel.tiers = {"smoke", "ci", "nightly", "regression", "invalid"};
    const std::string root = repo_root(o->root);
    auto cases = select_cases(root, o->sel);
    if (!cases) {
      exit_code = fail(cases.status());
      return;
    }
    nlohmann::json listed = nlohmann::json::array();
    for (const auto& c : *cases) {
      auto problem = make_problem(c);
      if (!problem) {
        exit_code = fail(problem.status());
        return;
      }
      if (o->json) {
        listed.push_back(case_json(c, **problem));
        continue;
      }
      const std::string expect = c.expect == 0 ? "ok" : std::to_string(c.expect);
      fmt::print("{:<44} {:<10} {:<11} seed {:<6} expect {}\n", c.id, c.tier, fill_mode_name(c.fill), c.seed, expect);
      if (o->params) fmt::print("    {}\n", (*problem)->params_json().dump());
    }
    if (o->json) {
      std::error_code ec;
      const std::string absolute_root = std::filesystem::weakly_canonical(std::filesystem::absolute(root), ec).string();
      nlohmann::json j{{"root", ec ? root : absolute_root}, {"ops", ops_json()}, {"defects", defects_json()}, {"cases", listed}};
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("{} case(s)\n", cases->size());
  });
}

}  // namespace opgate::cli
