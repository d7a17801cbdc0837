// Strict params reading shared by every operator's JSON binding.
#include "cases/param_reader.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace opgate {

const nlohmann::json* ParamReader::take(const char* key) {
  if (docs_ != nullptr) {
    const bool documented = std::any_of(docs_->begin(), docs_->end(), [&](const ParamDoc& d) { return d.name == std::string(key); });
    OPGATE_CHECK(documented, fmt::format("ParamReader: key '{}' is missing from the operator's param_docs()", key));
  }
  known_.insert(key);
  if (!j_.is_object() || !j_.contains(key)) return nullptr;
  return &j_[key];
}

void ParamReader::fail(const std::string& msg) {
  if (error_.is_ok()) error_ = parse_error(msg);
}

int64_t ParamReader::integer(const char* key, int64_t def, int64_t lo, int64_t hi) {
  const nlohmann::json* v = take(key);
  if (v == nullptr) return def;
  if (!v->is_number_integer()) {
    fail(fmt::format("field 'params.{}': expected an integer, got {}", key, v->dump()));
    return def;
  }
  const int64_t x = v->get<int64_t>();
  if (x < lo || x > hi) {
    fail(fmt::format("field 'params.{}': {} is outside [{}, {}]", key, x, lo, hi));
    return def;
  }
  return x;
}

double ParamReader::real(const char* key, double def, double lo, double hi) {
  const nlohmann::json* v = take(key);
  if (v == nullptr) return def;
  if (!v->is_number()) {
    fail(fmt::format("field 'params.{}': expected a number, got {}", key, v->dump()));
    return def;
  }
  const double x = v->get<double>();
  if (!(x >= lo && x <= hi)) {
    fail(fmt::format("field 'params.{}': {} is outside [{}, {}]", key, x, lo, hi));
    return def;
  }
  return x;
}

bool ParamReader::boolean(const char* key, bool def) {
  const nlohmann::json* v = take(key);
  if (v == nullptr) return def;
  if (!v->is_boolean()) {
    fail(fmt::format("field 'params.{}': expected true or false, got {}", key, v->dump()));
    return def;
  }
  return v->get<bool>();
}

DType ParamReader::dtype(const char* key, DType def) {
  const nlohmann::json* v = take(key);
  if (v == nullptr) return def;
  if (!v->is_string()) {
    fail(fmt::format("field 'params.{}': expected a dtype name, got {}", key, v->dump()));
    return def;
  }
  auto d = parse_dtype(v->get<std::string>());
  if (!d) {
    fail(fmt::format("field 'params.{}': {}", key, d.status().message()));
    return def;
  }
  return *d;
}

Status ParamReader::finish() const {
  if (!error_.is_ok()) return error_;
  if (!j_.is_object()) return parse_error("field 'params': not an object");
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (known_.count(it.key()) == 0) {
      std::string list;
      if (docs_ != nullptr) {
        for (const ParamDoc& d : *docs_) list += (list.empty() ? "" : ", ") + std::string(d.name);
      } else {
        for (const auto& k : known_) list += (list.empty() ? "" : ", ") + k;
      }
      return parse_error(fmt::format("field 'params.{}': unknown key (known: {})", it.key(), list));
    }
  }
  return Status::ok();
}

}  // namespace opgate
