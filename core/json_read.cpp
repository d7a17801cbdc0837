// Bounded JSON reading: nlohmann's SAX parser (iterative, no recursion) drives its own DOM builder
// through a handler that enforces the depth limit and rejects duplicate keys, keeping the JSON
// path of the value being read so that every error names the field.
#include "core/json_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

namespace opgate {
namespace {

using json = nlohmann::json;

// Error text from a library or the file itself may quote arbitrary bytes; one short line only.
std::string one_line(std::string s, size_t max = 240) {
  for (char& ch : s) {
    if (ch == '\n' || ch == '\r') ch = ' ';
  }
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

class BoundedSax {
 public:
  BoundedSax(json& root, const std::string& origin, JsonBudget* budget)
      : dom_(root, /*allow_exceptions=*/false), origin_(origin), budget_(budget) {}

  bool null() { return value() && dom_.null(); }
  bool boolean(bool v) { return value() && dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return value() && dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return value() && dom_.number_float(v, s); }
  bool string(json::string_t& v) { return value() && dom_.string(v); }
  bool binary(json::binary_t& v) { return value() && dom_.binary(v); }
  bool start_object(std::size_t n) { return open(true) && dom_.start_object(n); }
  bool end_object() {
    levels_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return open(false) && dom_.start_array(n); }
  bool end_array() {
    levels_.pop_back();
    return dom_.end_array();
  }
  bool key(json::string_t& k) {
    Level& l = levels_.back();
    if (!l.keys.insert(k).second) {
      l.key = k;
      return fail(fmt::format("duplicate key '{}' (each key may occur once per object)", one_line(k, 80)));
    }
    l.key = k;
    return dom_.key(k);
  }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& /*last_token*/, const Exception& ex) {
    // ex.what() is "[json.exception.parse_error.101] parse error at line 1, column 5: ...".
    std::string what = ex.what();
    if (const size_t close = what.find("] "); what.rfind("[json.exception.", 0) == 0 && close != std::string::npos) {
      what = what.substr(close + 2);
    }
    error_ = fmt::format("{}: malformed JSON: at byte {}: {}", origin_, position, one_line(what));
    return false;
  }

  const std::string& error() const { return error_; }

 private:
  struct Level {
    bool object = false;
    size_t count = 0;                     // array elements begun so far
    std::string key;                      // object: the key being read
    std::unordered_set<std::string> keys;  // object: keys seen
  };

  // A value begins: inside an array it is the next element.
  bool value() {
    if (!levels_.empty() && !levels_.back().object) ++levels_.back().count;
    if (budget_ != nullptr) {
      if (budget_->values_left == 0) {
        return fail(fmt::format("more JSON values than the {} allows", budget_->what));
      }
      --budget_->values_left;
    }
    return true;
  }
  bool open(bool object) {
    if (!value()) return false;
    if (levels_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      return fail(fmt::format("nested deeper than {} levels (JSON depth limit)", kMaxJsonDepth));
    }
    levels_.push_back(Level{object, 0, {}, {}});
    return true;
  }
  std::string path() const {
    std::string p;
    for (const Level& l : levels_) {
      if (l.object) {
        if (!l.key.empty() || !l.keys.empty()) p += (p.empty() ? "" : ".") + one_line(l.key, 80);
      } else if (l.count > 0) {
        p += fmt::format("[{}]", l.count - 1);
      }
      if (p.size() > 400) return one_line(p, 400);
    }
    return p;
  }
  bool fail(const std::string& why) {
    const std::string at = path();
    error_ = at.empty() ? fmt::format("{}: {}", origin_, why) : fmt::format("{}: field '{}': {}", origin_, at, why);
    return false;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::string origin_;
  JsonBudget* budget_;
  std::vector<Level> levels_;
  std::string error_;
};

std::string errno_text() { return std::strerror(errno); }

}  // namespace

Expected<nlohmann::json> parse_json_bounded(std::string_view text, const std::string& origin, JsonBudget* budget) {
  if (text.size() > kMaxJsonBytes) {
    return parse_error(fmt::format("{}: {} bytes, over the {} MiB JSON size limit", origin, text.size(),
                                   kMaxJsonBytes >> 20));
  }
  if (text.size() >= 3 && text.compare(0, 3, "\xEF\xBB\xBF") == 0) {
    return parse_error(origin + ": starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM");
  }
  json root;
  BoundedSax sax(root, origin, budget);
  const char* begin = text.data();
  bool ok = false;
  try {
    ok = json::sax_parse(begin, begin + text.size(), &sax);
  } catch (const std::exception& e) {  // e.g. bad_alloc from a huge string value
    return parse_error(fmt::format("{}: unreadable JSON: {}", origin, one_line(e.what())));
  }
  if (!ok) {
    return parse_error(sax.error().empty() ? origin + ": malformed JSON" : sax.error());
  }
  return root;
}

namespace {

// read_file_bounded on an open descriptor, which it closes.
Expected<std::string> read_open_file_bounded(int fd, const std::string& path, size_t limit, const char* what) {
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return io_error(fmt::format("{}: is a folder, not a file", path));
    }
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > limit) {
      ::close(fd);
      return parse_error(fmt::format("{}: {} bytes, over the {} MiB {} size limit", path,
                                     static_cast<uint64_t>(st.st_size), limit >> 20, what));
    }
  }
  std::string out;
  char buffer[1 << 16];
  while (out.size() <= limit) {
    const size_t want = std::min(sizeof buffer, limit + 1 - out.size());
    const ssize_t n = ::read(fd, buffer, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = errno_text();
      ::close(fd);
      return io_error(fmt::format("{}: read failed: {}", path, why));
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (out.size() > limit) {
    return parse_error(fmt::format("{}: more than {} bytes, over the {} MiB {} size limit", path, limit,
                                   limit >> 20, what));
  }
  return out;
}

}  // namespace

Expected<std::string> read_file_bounded(const std::string& path, size_t limit, const char* what) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(fmt::format("{}: cannot open for reading: {}", path, errno_text()));
  return read_open_file_bounded(fd, path, limit, what);
}

Expected<nlohmann::json> read_regular_json_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: a link is not followed.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP) return parse_error(fmt::format("{}: a symbolic link; opgate reads only the plain file it wrote", path));
    return io_error(fmt::format("{}: cannot open for reading: {}", path, errno_text()));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return parse_error(fmt::format("{}: not a regular file (a FIFO, device or folder); opgate reads only the plain "
                                   "file it wrote", path));
  }
  OPGATE_ASSIGN_OR_RETURN(std::string text, read_open_file_bounded(fd, path, kMaxJsonBytes, "JSON"));
  return parse_json_bounded(text, path);
}

Expected<nlohmann::json> read_json_file(const std::string& path) {
  OPGATE_ASSIGN_OR_RETURN(std::string text, read_file_bounded(path, kMaxJsonBytes, "JSON"));
  return parse_json_bounded(text, path);
}

}  // namespace opgate
