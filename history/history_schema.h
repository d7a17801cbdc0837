// The run history's schema, as ordered migrations: kMigrations[i] takes a database from
// `PRAGMA user_version` i to i + 1. A change appends a migration; released ones never change.
#pragma once

#include <array>
#include <cstdint>

namespace opgate::history {

// 'OPGH' in `PRAGMA application_id`: an SQLite file written by something else is not a history.
constexpr int32_t kApplicationId = 0x4F504748;

extern const std::array<const char*, 1> kMigrations;
constexpr int kSchemaVersion = 1;
// The tables of the current schema: each must exist in a history opened for recording or reading.
constexpr std::array<const char*, 4> kTables = {"runs", "cases", "results", "outputs"};

}  // namespace opgate::history
