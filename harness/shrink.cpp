// Greedy, cost-ordered shrinking of a failing case.
#include "harness/shrink.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "cases/generate.h"

namespace opgate {
namespace {

using Clock = std::chrono::steady_clock;

struct Cost {
  int64_t elements = 0;
  double magnitude = 0;  // sum of |numeric params|
  int fill = 0;          // exact < realistic < adversarial
  bool operator<(const Cost& o) const {
    if (elements != o.elements) return elements < o.elements;
    if (magnitude != o.magnitude) return magnitude < o.magnitude;
    return fill < o.fill;
  }
};

int fill_rank(FillMode m) {
  switch (m) {
    case FillMode::kExact: return 0;
    case FillMode::kRealistic: return 1;
    case FillMode::kAdversarial: return 2;
  }
  return 2;
}

std::optional<Cost> cost_of(const Case& c) {
  auto problem = make_problem(c);
  if (!problem || (c.expect == 0 && !(*problem)->validate().is_ok())) return std::nullopt;
  Cost cost;
  cost.elements = input_elements(**problem);
  for (auto it = c.params.begin(); it != c.params.end(); ++it) {
    const auto& v = it.value();
    if (v.is_number()) cost.magnitude += std::fabs(v.get<double>());
    if (v.is_boolean()) cost.magnitude += v.get<bool>() ? 1 : 0;
    if (v.is_array()) {
      for (const auto& e : v) cost.magnitude += e.is_number() ? std::fabs(e.get<double>()) : 0;
    }
  }
  cost.fill = fill_rank(c.fill);
  return cost;
}

// Smaller integers to try in place of v, most aggressive first.
std::vector<int64_t> smaller_integers(int64_t v) {
  std::vector<int64_t> out;
  if (v > 0) {
    for (int64_t c : {int64_t{0}, int64_t{1}, v / 2, v - 1}) {
      if (c < v && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
  } else if (v < 0) {
    for (int64_t c : {int64_t{0}, v / 2, v + 1}) {
      if (c > v && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
  }
  return out;
}

// Every one-step simplification of `c`, plus "halve every dimension at once" (dimensions are often
// coupled, e.g. heads divisible by KV heads, so single moves can get stuck).
std::vector<Case> candidates(const Case& c) {
  std::vector<Case> out;
  auto with = [&](const std::string& key, nlohmann::json value) {
    Case n = c;
    n.params[key] = std::move(value);
    out.push_back(std::move(n));
  };
  Case halved = c;
  bool any_halved = false;
  for (auto it = c.params.begin(); it != c.params.end(); ++it) {
    const std::string& key = it.key();
    const auto& v = it.value();
    if (v.is_number_integer()) {
      for (int64_t s : smaller_integers(v.get<int64_t>())) with(key, s);
      if (v.get<int64_t>() >= 2) {
        halved.params[key] = v.get<int64_t>() / 2;
        any_halved = true;
      }
    } else if (v.is_number_float() && v.get<double>() != 0) {
      with(key, 0.0);
      with(key, v.get<double>() / 2);
    } else if (v.is_boolean() && v.get<bool>()) {
      with(key, false);
    } else if (v.is_array() && !v.empty()) {
      nlohmann::json shorter = v;
      shorter.erase(shorter.size() - 1);
      with(key, shorter);
      nlohmann::json head(nlohmann::json::array());
      for (size_t i = 0; i < (v.size() + 1) / 2; ++i) head.push_back(v[i]);
      if (head.size() < v.size()) with(key, head);
      for (size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number_integer()) continue;
        for (int64_t s : smaller_integers(v[i].get<int64_t>())) {
          nlohmann::json e = v;
          e[i] = s;
          with(key, e);
        }
      }
    }
  }
  if (any_halved) out.push_back(halved);
  for (FillMode m : {FillMode::kExact, FillMode::kRealistic}) {
    if (fill_rank(m) < fill_rank(c.fill)) {
      Case n = c;
      n.fill = m;
      out.push_back(n);
    }
  }
  return out;
}

}  // namespace

std::string failure_signature(const CaseResult& r) {
  if (r.verdict != Verdict::kFailed) return verdict_name(r.verdict);
  std::vector<std::string> names;
  for (const auto& o : r.outputs) {
    if (!o.compare.passed) names.push_back(o.compare.name);
  }
  std::sort(names.begin(), names.end());
  std::string s = "FAILED ";
  if (names.empty()) return s + r.reason.substr(0, r.reason.find(':'));  // guards, determinism, ...
  for (size_t i = 0; i < names.size(); ++i) s += (i ? "," : "") + names[i];
  return s;
}

Expected<ShrinkResult> shrink_case(const Case& failing, Backend& backend, const ShrinkOptions& opt) {
  const auto t0 = Clock::now();
  auto run = [&](const Case& c) {
    // Crashes and hangs need the child process; everything else is faster in process.
    return opt.run.isolate ? run_case_isolated(c, backend, opt.run) : run_case(c, backend, opt.run);
  };
  ShrinkResult out;
  out.minimal = failing;
  out.result = run(failing);
  out.runs = 1;
  out.signature = failure_signature(out.result);
  if (!verdict_fails(out.result.verdict, false)) {
    return invalid_case(fmt::format("case '{}' does not fail on {} ({}: {}); nothing to shrink", failing.id,
                                    backend.name(), verdict_name(out.result.verdict), out.result.reason));
  }
  auto current_cost = cost_of(failing);
  if (!current_cost) return invalid_case(fmt::format("case '{}' is not a valid call", failing.id));
  out.elements_before = current_cost->elements;
  std::set<std::string> tried;
  bool improved = true;
  while (improved) {
    improved = false;
    // Cheapest candidates first: a small device run is worth more than a large one.
    std::vector<std::pair<Cost, Case>> next;
    for (Case& c : candidates(out.minimal)) {
      const std::string key = case_to_json(c).dump();
      if (!tried.insert(key).second) continue;
      if (auto cost = cost_of(c); cost && *cost < *current_cost) next.emplace_back(*cost, std::move(c));
    }
    std::stable_sort(next.begin(), next.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [cost, c] : next) {
      if (std::chrono::duration<double>(Clock::now() - t0).count() > opt.budget_s || out.runs >= opt.max_runs) {
        out.budget_exhausted = true;
        break;
      }
      CaseResult r = run(c);
      ++out.runs;
      if (failure_signature(r) != out.signature) continue;
      out.minimal = c;
      out.result = std::move(r);
      *current_cost = cost;
      ++out.steps;
      improved = true;
      break;
    }
    if (out.budget_exhausted) break;
  }
  out.elements_after = current_cost->elements;
  return out;
}

}  // namespace opgate
