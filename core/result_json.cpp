// Results to JSON and back. JSON has no infinity or NaN: non-finite numbers are written as the
// strings "inf", "-inf", "nan" (reports/README.md).
#include "core/result_json.h"

#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace opgate {
namespace {

nlohmann::json num(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

// Reads the fields of one JSON object into typed members; the first error wins and names the
// field under `where`. Absent fields leave the member as it is (its default).
class FieldReader {
 public:
  FieldReader(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {
    if (!j_.is_object()) fail("", "expected an object", j_);
  }
  const Status& status() const { return status_; }
  bool ok() const { return status_.is_ok(); }

  // The value at `key`, or nullptr when absent (or after an error).
  const nlohmann::json* find(const char* key) const {
    if (!ok() || !j_.is_object()) return nullptr;
    const auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  void text(const char* key, std::string& out) {
    if (const auto* v = find(key)) v->is_string() ? void(out = v->get<std::string>()) : fail(key, "expected a string", *v);
  }
  void boolean(const char* key, bool& out) {
    if (const auto* v = find(key)) v->is_boolean() ? void(out = v->get<bool>()) : fail(key, "expected true or false", *v);
  }
  void integer(const char* key, int64_t& out) {
    if (const auto* v = find(key)) read_integer(key, *v, out);
  }
  void number(const char* key, double& out) {
    if (const auto* v = find(key)) read_number(key, *v, out);
  }
  void integers(const char* key, std::vector<int64_t>& out) {
    const auto* v = find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return fail(key, "expected an array of integers", *v);
    out.assign(v->size(), 0);
    for (size_t i = 0; i < v->size() && ok(); ++i) read_integer(key, (*v)[i], out[i]);
  }
  void numbers(const char* key, std::vector<double>& out) {
    const auto* v = find(key);
    if (v == nullptr) return;
    if (!v->is_array()) return fail(key, "expected an array of numbers", *v);
    out.assign(v->size(), 0.0);
    for (size_t i = 0; i < v->size() && ok(); ++i) read_number(key, (*v)[i], out[i]);
  }
  void histogram(const char* key, std::array<int64_t, 8>& out) {
    const auto* v = find(key);
    if (v == nullptr) return;
    if (!v->is_array() || v->size() != out.size()) return fail(key, "expected an array of 8 integers", *v);
    for (size_t i = 0; i < out.size() && ok(); ++i) read_integer(key, (*v)[i], out[i]);
  }
  void fail(const std::string& key, const std::string& what, const nlohmann::json& got) {
    if (!ok()) return;
    std::string shown = got.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (shown.size() > 60) shown = shown.substr(0, 60) + "...";
    status_ = parse_error(key.empty() ? fmt::format("{}: {}, got {}", where_, what, shown)
                                      : fmt::format("{}: field '{}': {}, got {}", where_, key, what, shown));
  }
  const std::string& where() const { return where_; }

 private:
  void read_integer(const char* key, const nlohmann::json& v, int64_t& out) {
    if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX))) {
      out = v.get<int64_t>();
    } else {
      fail(key, "expected an integer", v);
    }
  }
  // A number, or one of the strings num() writes; null (a non-finite value written raw) is NaN.
  void read_number(const char* key, const nlohmann::json& v, double& out) {
    if (v.is_number()) {
      out = v.get<double>();
    } else if (v.is_null()) {
      out = std::numeric_limits<double>::quiet_NaN();
    } else if (v == "inf" || v == "-inf") {
      out = v == "inf" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
    } else if (v == "nan") {
      out = std::numeric_limits<double>::quiet_NaN();
    } else {
      fail(key, "expected a number (or \"inf\", \"-inf\", \"nan\")", v);
    }
  }

  const nlohmann::json& j_;
  std::string where_;
  Status status_ = Status::ok();
};

Expected<ComparePoint> point_from_json(const nlohmann::json& j, const std::string& where) {
  ComparePoint p;
  FieldReader f(j, where);
  f.integers("index", p.index);
  f.number("expected", p.expected);
  f.number("expected_rounded", p.expected_rounded);
  f.number("got", p.got);
  f.number("abs_err", p.abs_err);
  f.number("rel_err", p.rel_err);
  f.number("allowed", p.allowed);
  f.boolean("poison", p.poison);
  if (const auto* a = f.find("accepted")) {
    if (!a->is_array() || a->size() != 2) {
      f.fail("accepted", "expected [low, high]", *a);
    } else {
      p.interval = true;
      const nlohmann::json named{{"low", (*a)[0]}, {"high", (*a)[1]}};
      FieldReader ends(named, where + ": field 'accepted'");
      ends.number("low", p.accepted_lo);
      ends.number("high", p.accepted_hi);
      if (!ends.ok()) return ends.status();
    }
  }
  f.text("where", p.where);
  if (!f.ok()) return f.status();
  return p;
}

Status points_from_json(FieldReader& f, const char* key, std::vector<ComparePoint>& out) {
  const auto* list = f.find(key);
  if (list == nullptr) return f.status();
  if (!list->is_array()) {
    f.fail(key, "expected an array", *list);
    return f.status();
  }
  for (size_t i = 0; i < list->size(); ++i) {
    OPGATE_ASSIGN_OR_RETURN(ComparePoint p, point_from_json((*list)[i], fmt::format("{}.{}[{}]", f.where(), key, i)));
    out.push_back(std::move(p));
  }
  return Status::ok();
}

Expected<CompareMetrics> metrics_from_json(const nlohmann::json& j, const std::string& where) {
  CompareMetrics m;
  FieldReader f(j, where);
  for (auto [key, field] : {std::pair{"elements", &m.elements}, {"compared", &m.compared}, {"mismatches", &m.mismatches},
                            {"poison_left", &m.poison_left}, {"determined", &m.determined},
                            {"beyond_range", &m.beyond_range}, {"balance_pos", &m.balance_pos}, {"balance_neg", &m.balance_neg},
                            {"balance_away", &m.balance_away}, {"balance_toward", &m.balance_toward}}) {
    f.integer(key, *field);
  }
  for (auto [key, field] : {std::pair{"max_abs", &m.max_abs}, {"max_rel", &m.max_rel}, {"mere", &m.mere},
                            {"mare", &m.mare}, {"rmse", &m.rmse}, {"error_balance", &m.error_balance},
                            {"balance_limit", &m.balance_limit}, {"cosine", &m.cosine}, {"max_ulp", &m.max_ulp},
                            {"budget_used", &m.budget_used}}) {
    f.number(key, *field);
  }
  f.histogram("ulp_hist", m.ulp_hist);
  f.integer("axis_rows", m.axis_rows);
  f.numbers("axis_budget", m.axis_budget);
  f.number("effective_bits", m.effective_bits);
  if (!f.ok()) return f.status();
  if (const auto* a = f.find("ascend")) {  // absent in reports before issue 25
    FieldReader fa(*a, where + ": field 'ascend'");
    fa.integer("n", m.ascend.n);
    fa.integer("over_rate", m.ascend.over_rate);
    fa.number("max_abs_err", m.ascend.max_abs_err);
    fa.number("max_scaled_err", m.ascend.max_scaled_err);
    fa.number("sum_scaled_signed", m.ascend.sum_scaled_signed);
    fa.number("max_rel_over", m.ascend.max_rel_over);
    if (!fa.ok()) return fa.status();
  }
  return m;
}

Status enum_field(FieldReader& f, const char* key, const std::function<bool(const std::string&)>& set,
                  const char* what) {
  std::string name;
  const auto* v = f.find(key);
  f.text(key, name);
  if (f.ok() && v != nullptr && !set(name)) f.fail(key, what, *v);
  return f.status();
}

// The scalar metrics and the ULP histogram (every output has them).
nlohmann::json metrics_json(const CompareMetrics& m) {
  return {{"elements", m.elements},
          {"compared", m.compared},
          {"mismatches", m.mismatches},
          {"poison_left", m.poison_left},
          {"max_abs", num(m.max_abs)},
          {"max_rel", num(m.max_rel)},
          {"mere", num(m.mere)},
          {"mare", num(m.mare)},
          {"rmse", num(m.rmse)},
          {"determined", m.determined},
          {"beyond_range", m.beyond_range},
          {"error_balance", num(m.error_balance)},
          {"balance_pos", m.balance_pos},
          {"balance_neg", m.balance_neg},
          {"balance_away", m.balance_away},
          {"balance_toward", m.balance_toward},
          {"balance_limit", num(m.balance_limit)},
          {"cosine", num(m.cosine)},
          {"max_ulp", num(m.max_ulp)},
          {"budget_used", num(m.budget_used)},
          {"effective_bits", num(m.effective_bits)},
          {"ulp_hist", m.ulp_hist},
          {"ascend", {{"n", m.ascend.n}, {"max_abs_err", num(m.ascend.max_abs_err)}, {"max_scaled_err", num(m.ascend.max_scaled_err)},
                      {"sum_scaled_signed", num(m.ascend.sum_scaled_signed)}, {"over_rate", m.ascend.over_rate},
                      {"max_rel_over", num(m.ascend.max_rel_over)}}}};
}

}  // namespace

nlohmann::json to_json(const OutputCheck& c) {
  nlohmann::json j{{"name", c.name}, {"kind", check_kind_name(c.kind)}, {"dtype", dtype_name(c.device_dtype)},
                   {"reason", c.reason}};
  if (c.kind == CheckKind::kTolerance) {
    j["standard"] = standard_name(c.tol.standard);
    if (c.tol.standard == Standard::kBound) {
      j["c"] = c.tol.c;
      j["u_acc"] = c.tol.u_acc;
      j["out_ulps"] = c.tol.out_ulps;
      if (c.balance_cluster > 0) j["balance_cluster"] = c.balance_cluster;
    }
    if (c.tol.standard == Standard::kAllclose) {
      j["rtol"] = c.tol.rtol;
      j["atol"] = c.tol.atol;
      j["max_bad_fraction"] = c.tol.max_bad_fraction;
    }
  }
  if (c.kind == CheckKind::kQuantized) j["max_steps"] = c.max_steps;
  if (c.kind != CheckKind::kExact && c.kind != CheckKind::kUndefined) {
    j["op_class"] = op_class_name(c.op_class);
    if (c.accumulations > 0) j["accumulations"] = c.accumulations;
    if (!c.standards_na.empty()) j["standards_na"] = c.standards_na;
  }
  return j;
}

nlohmann::json to_json(const CompareMetrics& m) {
  nlohmann::json j = metrics_json(m);
  if (!m.axis_budget.empty()) {
    j["axis_rows"] = m.axis_rows;
    nlohmann::json cells = nlohmann::json::array();
    for (double v : m.axis_budget) cells.push_back(num(v));
    j["axis_budget"] = std::move(cells);
  }
  return j;
}


nlohmann::json to_json(const ComparePoint& p) {
  nlohmann::json j{{"index", p.index}, {"expected", num(p.expected)}, {"expected_rounded", num(p.expected_rounded)},
                   {"got", num(p.got)}, {"abs_err", num(p.abs_err)}, {"rel_err", num(p.rel_err)},
                   {"allowed", num(p.allowed)}};
  if (p.poison) j["poison"] = true;
  if (p.interval) j["accepted"] = {num(p.accepted_lo), num(p.accepted_hi)};
  if (!p.where.empty()) j["where"] = p.where;
  return j;
}

nlohmann::json to_json(const CompareResult& r) {
  nlohmann::json j{{"name", r.name}, {"check", r.standard}, {"passed", r.passed}, {"message", r.message},
                   {"metrics", to_json(r.metrics)}};
  if (!r.axis_name.empty()) j["axis_name"] = r.axis_name;
  for (const auto& p : r.first_failures) j["first_failures"].push_back(to_json(p));
  for (const auto& p : r.worst) j["worst"].push_back(to_json(p));
  for (const auto& st : r.standards) {
    j["standards"][st.name] = {{"applies", st.verdict.applies}, {"passed", st.verdict.passed},
                               {"detail", st.verdict.detail}};
  }
  return j;
}

nlohmann::json to_json(const OutputResult& o) {
  nlohmann::json j = to_json(o.compare);
  j["plan"] = to_json(o.plan);
  return j;
}

nlohmann::json to_json(const CaseResult& r) {
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& o : r.outputs) outputs.push_back(to_json(o));
  nlohmann::json stages = nlohmann::json::object();
  for (const StageField& f : stage_fields()) stages[f.name] = r.stages_ms.*f.ms;
  nlohmann::json j{{"id", r.id},
                   {"op", r.op},
                   {"tier", r.tier},
                   {"backend", r.backend},
                   {"verdict", verdict_name(r.verdict)},
                   {"reason", r.reason},
                   {"repro", r.repro},
                   {"repeats", r.repeats},
                   {"determinism_checked", r.determinism_checked},
                   {"ms", {{"fill", r.fill_ms}, {"reference", r.reference_ms}, {"device", r.device_ms},
                           {"total", r.total_ms}}},
                   {"stages_ms", std::move(stages)},
                   {"outputs", std::move(outputs)}};
  if (!r.warnings.empty()) j["warnings"] = r.warnings;
  if (!r.case_json.is_null()) j["case"] = r.case_json;
  return j;
}

Expected<OutputCheck> output_check_from_json(const nlohmann::json& j) {
  OutputCheck c;
  FieldReader f(j, "plan");
  f.text("name", c.name);
  OPGATE_TRY(enum_field(f, "kind", [&](const std::string& s) {
    for (CheckKind k : {CheckKind::kExact, CheckKind::kTolerance, CheckKind::kQuantized, CheckKind::kUndefined}) {
      if (s == check_kind_name(k)) return c.kind = k, true;
    }
    return false;
  }, "expected exact, tolerance, quantized or undefined"));
  OPGATE_TRY(enum_field(f, "dtype", [&](const std::string& s) {
    auto d = parse_dtype(s);
    return d ? (c.device_dtype = *d, true) : false;
  }, "expected a dtype name"));
  OPGATE_TRY(enum_field(f, "standard", [&](const std::string& s) {
    auto st = parse_standard(s);
    return st ? (c.tol.standard = *st, true) : false;
  }, "expected a tolerance standard"));
  f.text("reason", c.reason);
  f.number("c", c.tol.c);
  f.number("u_acc", c.tol.u_acc);
  f.number("out_ulps", c.tol.out_ulps);
  f.integer("balance_cluster", c.balance_cluster);
  f.number("rtol", c.tol.rtol);
  f.number("atol", c.tol.atol);
  f.number("max_bad_fraction", c.tol.max_bad_fraction);
  f.integer("max_steps", c.max_steps);
  f.integer("accumulations", c.accumulations);
  f.text("standards_na", c.standards_na);
  OPGATE_TRY(enum_field(f, "op_class", [&](const std::string& s) {
    auto oc = parse_op_class(s);
    return oc ? (c.op_class = *oc, true) : false;
  }, "expected an operator class (move, cast, compute-integer, compute-quant, compute-float, cv-fusion)"));
  if (!f.ok()) return f.status();
  return c;
}

// The "standards" object of an output: {name: {applies, passed, detail}} (issue 25).
Status standards_from_json(const nlohmann::json& j, std::vector<StandardResult>& out) {
  if (!j.is_object()) return parse_error("output: field 'standards': expected an object");
  for (const auto& [name, v] : j.items()) {
    StandardResult s{name, {}};
    FieldReader f(v, fmt::format("output: field 'standards.{}'", name));
    f.boolean("applies", s.verdict.applies);
    f.boolean("passed", s.verdict.passed);
    f.text("detail", s.verdict.detail);
    if (!f.ok()) return f.status();
    out.push_back(std::move(s));
  }
  return Status::ok();
}

Expected<CompareResult> compare_result_from_json(const nlohmann::json& j) {
  CompareResult r;
  FieldReader f(j, "output");
  f.text("name", r.name);
  f.text("check", r.standard);
  f.boolean("passed", r.passed);
  f.text("message", r.message);
  f.text("axis_name", r.axis_name);
  if (const auto* m = f.find("metrics")) {
    OPGATE_ASSIGN_OR_RETURN(r.metrics, metrics_from_json(*m, "output: field 'metrics'"));
  }
  OPGATE_TRY(points_from_json(f, "first_failures", r.first_failures));
  OPGATE_TRY(points_from_json(f, "worst", r.worst));
  if (!f.ok()) return f.status();
  if (const auto* st = f.find("standards")) OPGATE_TRY(standards_from_json(*st, r.standards));
  return r;
}

Expected<OutputResult> output_result_from_json(const nlohmann::json& j) {
  OutputResult o;
  OPGATE_ASSIGN_OR_RETURN(o.compare, compare_result_from_json(j));
  if (j.contains("plan")) {
    OPGATE_ASSIGN_OR_RETURN(o.plan, output_check_from_json(j["plan"]));
  }
  o.compare.kind = o.plan.kind;
  return o;
}

Expected<CaseResult> case_result_from_json(const nlohmann::json& j) {
  try {
    CaseResult r;
    r.id = j.at("id").get<std::string>();
    FieldReader f(j, fmt::format("case result '{}'", r.id));
    f.text("op", r.op);
    f.text("tier", r.tier);
    f.text("backend", r.backend);
    OPGATE_ASSIGN_OR_RETURN(r.verdict, parse_verdict(j.at("verdict").get<std::string>()));
    f.text("reason", r.reason);
    f.text("repro", r.repro);
    // Checked before conversion: a float like 1e300 converted to int is undefined behaviour.
    if (j.contains("repeats")) {
      const auto& rep = j["repeats"];
      if (!rep.is_number_integer() || rep.get<int64_t>() < 1 || rep.get<int64_t>() > 1000000) {
        return parse_error(fmt::format("case result '{}': field 'repeats': expected an integer in [1, 1000000], got {}",
                                       r.id, rep.dump()));
      }
      r.repeats = static_cast<int>(rep.get<int64_t>());
    }
    f.boolean("determinism_checked", r.determinism_checked);
    if (const auto* ms = f.find("ms")) {
      FieldReader times(*ms, f.where() + ": field 'ms'");
      times.number("fill", r.fill_ms);
      times.number("reference", r.reference_ms);
      times.number("device", r.device_ms);
      times.number("total", r.total_ms);
      if (!times.ok()) return times.status();
    }
    if (const auto* stages = f.find("stages_ms")) {
      FieldReader times(*stages, f.where() + ": field 'stages_ms'");
      for (const StageField& field : stage_fields()) times.number(field.name, r.stages_ms.*field.ms);
      if (!times.ok()) return times.status();
    }
    if (const auto* outputs = f.find("outputs")) {
      if (!outputs->is_array()) f.fail("outputs", "expected an array", *outputs);
      for (size_t i = 0; f.ok() && i < outputs->size(); ++i) {
        auto o = output_result_from_json((*outputs)[i]);
        if (!o) return o.status().with_context(fmt::format("{}: outputs[{}]", f.where(), i));
        r.outputs.push_back(std::move(*o));
      }
    }
    if (j.contains("warnings")) r.warnings = j["warnings"].get<std::vector<std::string>>();
    if (j.contains("case")) r.case_json = j["case"];
    if (!f.ok()) return f.status();
    return r;
  } catch (const nlohmann::json::exception& e) {
    return parse_error(fmt::format("case result: {}", e.what()));
  }
}

std::string number_text(double v) { return num(v).dump(); }

}  // namespace opgate
