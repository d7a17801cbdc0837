// Each operator's table of accepted case params (cases/param_docs.h) against its parser: every key
// of the table is accepted (never "unknown key"), every key the effective params name is in the
// table, and the unknown-key error lists exactly the table (issue 24: MoeFFN's used to omit the
// keys read before its reader, activation and expertTokens).
#include "cases/param_docs.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "cases/registry.h"

namespace opgate {
namespace {

// A value of the documented type: the parser may refuse it (range, "does not apply"), but never
// as an unknown key.
nlohmann::json value_of(const ParamDoc& d) {
  const std::string type = d.type;
  if (type.rfind("integer list", 0) == 0) return nlohmann::json::array({1});
  if (type.rfind("integer", 0) == 0) return 1;
  if (type == "real") return 0.5;
  if (type == "bool") return true;
  if (type == "dtype") return "float16";
  return "x";
}

TEST(ParamDocs, EveryOperatorHasATableOfUniqueDocumentedKeys) {
  ASSERT_FALSE(all_ops().empty());
  for (const OpInfo& op : all_ops()) {
    const std::vector<ParamDoc>* docs = param_docs_of(op.stem);
    ASSERT_NE(docs, nullptr) << op.stem;
    EXPECT_EQ(param_docs_of(op.short_name), docs) << op.short_name;
    std::set<std::string> names;
    for (const ParamDoc& d : *docs) {
      EXPECT_TRUE(names.insert(d.name).second) << op.stem << ": " << d.name << " twice";
      EXPECT_FALSE(std::string(d.type).empty() || std::string(d.def).empty() || std::string(d.meaning).empty())
          << op.stem << ": " << d.name;
      EXPECT_EQ(std::string(d.meaning).find('|'), std::string::npos) << "breaks the Markdown table: " << d.name;
    }
  }
  EXPECT_EQ(param_docs_of("no_such_op"), nullptr);
}

TEST(ParamDocs, EveryDocumentedKeyIsAcceptedAndEveryEffectiveParamIsDocumented) {
  for (const OpInfo& op : all_ops()) {
    const std::vector<ParamDoc>& docs = *param_docs_of(op.stem);
    std::set<std::string> names;
    for (const ParamDoc& d : docs) {
      names.insert(d.name);
      auto problem = op.parse(nlohmann::json{{d.name, value_of(d)}}, nlohmann::json::object());
      if (!problem) {
        EXPECT_EQ(problem.status().message().find("unknown key"), std::string::npos)
            << op.stem << ": " << problem.status().message();
      }
    }
    auto problem = op.parse(nlohmann::json::object(), nlohmann::json::object());
    ASSERT_TRUE(problem.has_value()) << op.stem << ": " << problem.status().message();
    const nlohmann::json effective = (*problem)->params_json();
    for (auto it = effective.begin(); it != effective.end(); ++it) {
      const std::string key = it.key();
      EXPECT_EQ(names.count(key), 1u) << op.stem << ": effective param '" << key << "' is not in the table";
    }
  }
}

TEST(ParamDocs, TheUnknownKeyErrorListsExactlyTheTable) {
  for (const OpInfo& op : all_ops()) {
    std::string list;
    for (const ParamDoc& d : *param_docs_of(op.stem)) list += (list.empty() ? "" : ", ") + std::string(d.name);
    auto problem = op.parse(nlohmann::json{{"bogusKey", 1}}, nlohmann::json::object());
    ASSERT_FALSE(problem.has_value()) << op.stem;
    EXPECT_EQ(problem.status().message(), "field 'params.bogusKey': unknown key (known: " + list + ")") << op.stem;
  }
  // The keys MoeFFN reads before its reader, named by hand from the aclnnMoeFFN call.
  auto mffn = find_op("moe_ffn")->parse(nlohmann::json{{"bogusKey", 1}}, nlohmann::json::object());
  for (const char* key : {"activation", "expertTokens", "innerPrecise", "K1", "N1"}) {
    EXPECT_NE(mffn.status().message().find(key), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace opgate
