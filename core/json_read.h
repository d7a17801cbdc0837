// The one JSON reader for every file opgate reads (case files, golden case.json and manifest.json,
// results.jsonl lines, run.json, baseline.json, failed/<id>.json, the case child's result pipe).
// Hostile input must cost at most a bounded amount of memory and stack, so every document is read
// under three limits, each named in its error together with the file and the JSON path:
//   - size: at most kMaxJsonBytes; a file is read up to limit+1 bytes and never held whole, so
//     /dev/zero or a 200 MB file is rejected after reading 8 MiB;
//   - depth: at most kMaxJsonDepth nested arrays/objects (opgate's own files need 6; a deep
//     document would otherwise recurse off the stack when copied, compared or printed);
//   - duplicate keys are errors (nlohmann keeps the last one silently).
// A UTF-8 byte-order mark is rejected with its own message: opgate never writes one, and
// accepting it for some readers and not others would make the same file mean different things.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace opgate {

// 8 MiB: the largest case file in the repository is 20 KB, a results.jsonl line a few KB. The
// parsed form of a hostile document costs up to ~40x its text (measured: 16 MiB of "[]," took
// 663 MB in `golden regen`), so 8 MiB keeps the worst case near 330 MB, well under the 1 GB every
// command must stay within.
constexpr size_t kMaxJsonBytes = size_t{8} << 20;
// 64 levels: opgate's deepest document (a results.jsonl line) nests 6.
constexpr int kMaxJsonDepth = 64;
// results.jsonl is read whole and every line is kept parsed, so the file has limits of its own: at
// most 128 MiB of text and 4 Mi JSON values over all its lines (a real result line holds ~80 values
// in ~1.3 KB, so that is ~50,000 results; parsed values cost at most ~80 bytes each: 320 MB).
constexpr size_t kMaxResultsBytes = size_t{128} << 20;
constexpr size_t kMaxResultsValues = size_t{4} << 20;

// A number of JSON values several documents share (the lines of one results.jsonl).
struct JsonBudget {
  size_t values_left;
  const char* what;  // names the limit in the error: "results.jsonl value limit"
};

// Parses `text` under the limits; `origin` (a path, "file: line 3", ...) prefixes every error.
// With a budget, every value parsed counts against it.
Expected<nlohmann::json> parse_json_bounded(std::string_view text, const std::string& origin,
                                            JsonBudget* budget = nullptr);
// Reads `path` (at most kMaxJsonBytes + 1 bytes) and parses it.
Expected<nlohmann::json> read_json_file(const std::string& path);
// read_json_file of a file that must be the plain file opgate wrote (failed/<id>.json): a symbolic
// link, FIFO, device or folder is an error, found without following the link or waiting on the FIFO.
Expected<nlohmann::json> read_regular_json_file(const std::string& path);
// Reads at most `limit` bytes of `path`; a larger file (or an endless one like /dev/zero) is an
// error naming `what` and the limit, found by reading limit+1 bytes or from the file's size.
Expected<std::string> read_file_bounded(const std::string& path, size_t limit, const char* what);

}  // namespace opgate
