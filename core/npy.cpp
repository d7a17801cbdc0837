// NumPy .npy encoding and a strict, bounds-checked decoder (golden-format.md "Tensor files"), plus
// the atomic file writer every golden/report writer shares. The decoder is a fuzz target: it reads
// only inside [data, data + size) and reports every malformed input as a kParseError.

#include "core/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace opgate {
namespace {

// Element bytes are copied verbatim, which is only the '<' layout on a little-endian host.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, ".npy I/O assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kArrayAlign = 64;
// numpy >= 1.23 leaves room for shape[0] to grow to this many digits in place; matching it keeps
// our files byte-identical to np.save.
constexpr size_t kGrowthAxisMaxDigits = 21;

// Untrusted header text quoted in messages: non-printable bytes escaped, long text cut short.
std::string quoted(std::string_view s) {
  constexpr size_t kMaxShown = 48;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  if (s.size() > kMaxShown) out += "...";
  return out;
}

std::string shape_repr(const Shape& shape) {
  if (shape.size() == 1) return fmt::format("({},)", shape[0]);
  return fmt::format("({})", fmt::join(shape, ", "));
}

struct NpyHeader {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<Shape> shape;
};

// Recursive-descent reader for the one dict literal numpy writes:
// {'descr': <str>, 'fortran_order': <bool>, 'shape': <tuple of int>} with keys in any order.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string prefix) : text_(text), prefix_(std::move(prefix)) {}

  Expected<NpyHeader> parse() {
    NpyHeader h;
    skip_space();
    if (!consume('{')) return error(fmt::format("not a dict literal: expected '{{' at offset {}", pos_));
    skip_space();
    while (!consume('}')) {
      OPGATE_ASSIGN_OR_RETURN(std::string key, parse_string("a key"));
      skip_space();
      if (!consume(':')) return error(fmt::format("expected ':' after key '{}'", quoted(key)));
      skip_space();
      if (key == "descr") {
        if (h.descr) return duplicate(key);
        if (peek() == '[') return field_error(key, "structured dtypes are not supported");
        OPGATE_ASSIGN_OR_RETURN(h.descr, parse_string("field 'descr'"));
      } else if (key == "fortran_order") {
        if (h.fortran_order) return duplicate(key);
        OPGATE_ASSIGN_OR_RETURN(h.fortran_order, parse_bool(key));
      } else if (key == "shape") {
        if (h.shape) return duplicate(key);
        OPGATE_ASSIGN_OR_RETURN(h.shape, parse_shape());
      } else {
        return error(fmt::format("unexpected key '{}' (expected descr, fortran_order, shape)", quoted(key)));
      }
      skip_space();
      if (consume(',')) {
        skip_space();
      } else if (peek() != '}') {
        return error(fmt::format("not a dict literal: expected ',' or '}}' at offset {}", pos_));
      }
    }
    skip_space();
    if (pos_ != text_.size()) {
      return error(fmt::format("unexpected text after the dict: '{}'", quoted(text_.substr(pos_))));
    }
    if (!h.descr) return error("missing key 'descr'");
    if (!h.fortran_order) return error("missing key 'fortran_order'");
    if (!h.shape) return error("missing key 'shape'");
    return h;
  }

 private:
  // -1 at the end, so no caller can read past the header.
  int peek() const { return pos_ < text_.size() ? static_cast<unsigned char>(text_[pos_]) : -1; }

  bool consume(char c) {
    if (peek() != static_cast<unsigned char>(c)) return false;
    ++pos_;
    return true;
  }

  void skip_space() {
    while (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r') ++pos_;
  }

  Status error(const std::string& what) const { return parse_error(fmt::format("{}{}", prefix_, what)); }
  Status field_error(const std::string& key, const std::string& what) const {
    return error(fmt::format("field '{}': {}", key, what));
  }
  Status duplicate(const std::string& key) const { return error(fmt::format("duplicate key '{}'", key)); }

  Expected<std::string> parse_string(const char* what) {
    const int quote = peek();
    if (quote != '\'' && quote != '"') {
      return error(fmt::format("{}: expected a quoted string at offset {}", what, pos_));
    }
    ++pos_;
    const size_t start = pos_;
    while (peek() != quote) {
      if (peek() == -1) return error(fmt::format("{}: unterminated string", what));
      if (peek() == '\\') return error(fmt::format("{}: escape sequences are not supported", what));
      ++pos_;
    }
    std::string s(text_.substr(start, pos_ - start));
    ++pos_;
    return s;
  }

  // A bare word: identifiers, numbers and signs, so "2.5" or "-3" are reported whole.
  std::string_view parse_word() {
    const size_t start = pos_;
    while (true) {
      const int c = peek();
      const bool word_char = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                             c == '_' || c == '.' || c == '-' || c == '+';
      if (!word_char) break;
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  Expected<bool> parse_bool(const std::string& key) {
    const std::string_view word = parse_word();
    if (word == "True") return true;
    if (word == "False") return false;
    return field_error(key, fmt::format("expected True or False, got '{}'", quoted(word)));
  }

  Expected<Shape> parse_shape() {
    if (!consume('(')) return field_error("shape", fmt::format("expected a tuple at offset {}", pos_));
    Shape shape;
    bool saw_comma = false;
    skip_space();
    while (!consume(')')) {
      const std::string_view word = parse_word();
      if (word.empty()) {
        if (peek() == -1) return field_error("shape", "unterminated tuple");
        return field_error("shape", fmt::format("unexpected character '{}' in the tuple",
                                                quoted(text_.substr(pos_, 1))));
      }
      OPGATE_ASSIGN_OR_RETURN(int64_t extent, parse_extent(word));
      shape.push_back(extent);
      skip_space();
      saw_comma = consume(',');
      if (!saw_comma && peek() != ')') {
        return field_error("shape", fmt::format("expected ',' or ')' at offset {}", pos_));
      }
      skip_space();
    }
    // Python reads "(5)" as the integer 5, not a tuple; numpy would reject it too.
    if (shape.size() == 1 && !saw_comma) {
      return field_error("shape", fmt::format("'({})' is an integer, not a tuple", shape[0]));
    }
    return shape;
  }

  Expected<int64_t> parse_extent(std::string_view word) {
    const bool negative = word[0] == '-' && word.size() > 1;
    int64_t v = 0;
    for (const char c : negative ? word.substr(1) : word) {
      if (c < '0' || c > '9') {
        return field_error("shape", fmt::format("extent '{}' is not an integer", quoted(word)));
      }
      if (v > (std::numeric_limits<int64_t>::max() - (c - '0')) / 10) {
        return field_error("shape", fmt::format("extent {} overflows int64", quoted(word)));
      }
      v = v * 10 + (c - '0');
    }
    if (negative) return field_error("shape", fmt::format("extent {} is negative", quoted(word)));
    return v;
  }

  std::string_view text_;
  std::string prefix_;
  size_t pos_ = 0;
};

// Maps a descr to our dtype. One-byte types accept any byte-order mark, since order is moot there.
Expected<DType> dtype_from_descr(const std::string& descr, const std::string& prefix) {
  auto unsupported = [&](const char* why) {
    return parse_error(fmt::format("{}field 'descr': unsupported dtype '{}'{}", prefix, quoted(descr), why));
  };
  struct Kind {
    const char* code;
    DType dtype;
  };
  // No uint16 dtype exists here: '<u2' is always the bfloat16 bit-pattern convention.
  static constexpr Kind kKinds[] = {{"f8", DType::kF64}, {"f4", DType::kF32}, {"f2", DType::kF16},
                                    {"u2", DType::kBF16}, {"i1", DType::kI8},  {"u1", DType::kU8},
                                    {"i4", DType::kI32},  {"i8", DType::kI64}, {"u8", DType::kU64},
                                    {"b1", DType::kBool}};
  if (descr.size() != 3) return unsupported("");
  const char order = descr[0];
  const std::string_view code = std::string_view(descr).substr(1);
  for (const Kind& kind : kKinds) {
    if (code != kind.code) continue;
    if (order != '<' && order != '>' && order != '|' && order != '=') return unsupported("");
    if (dtype_size(kind.dtype) == 1) return kind.dtype;
    if (order == '>') return unsupported(" (big-endian)");
    if (order != '<') return unsupported(" (multi-byte types need the explicit '<' byte order)");
    return kind.dtype;
  }
  return unsupported("");
}

uint32_t read_le(const uint8_t* p, size_t n) {
  uint32_t v = 0;
  for (size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

std::string errno_message() { return std::error_code(errno, std::generic_category()).message(); }

}  // namespace

const char* npy_descr(DType t) {
  switch (t) {
    case DType::kF64: return "<f8";
    case DType::kF32: return "<f4";
    case DType::kF16: return "<f2";
    case DType::kBF16: return "<u2";
    case DType::kI8: return "|i1";
    case DType::kU8: return "|u1";
    case DType::kI32: return "<i4";
    case DType::kI64: return "<i8";
    case DType::kU64: return "<u8";
    case DType::kBool: return "|b1";
  }
  OPGATE_CHECK(false, fmt::format("invalid DType value {}", static_cast<int>(t)));
}

std::vector<uint8_t> encode_npy(const Tensor& t) {
  OPGATE_CHECK(t.defined(), "encode_npy of an undefined tensor");
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   npy_descr(t.dtype()), shape_repr(t.shape()));
  if (t.rank() > 0) {
    const size_t digits = fmt::formatted_size("{}", t.dim(0));
    if (digits < kGrowthAxisMaxDigits) header.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // numpy's _wrap_header: pad so magic + version + length + header + '\n' is a multiple of 64,
  // adding a full 64 spaces when it already is.
  const size_t hlen = header.size() + 1;
  const size_t padlen = kArrayAlign - ((kMagicLen + 2 + 2 + hlen) % kArrayAlign);
  header.append(padlen, ' ');
  header += '\n';
  OPGATE_CHECK(header.size() <= 0xffff, "npy header exceeds the version 1.0 limit");

  // Sized once and filled with memcpy (GCC 12 at -O3 misreports insert() chains as overflows).
  std::vector<uint8_t> out(kMagicLen + 4 + header.size() + t.nbytes());
  uint8_t* p = out.data();
  std::memcpy(p, kMagic, kMagicLen);
  p += kMagicLen;
  *p++ = 1;
  *p++ = 0;
  *p++ = static_cast<uint8_t>(header.size() & 0xff);
  *p++ = static_cast<uint8_t>(header.size() >> 8);
  std::memcpy(p, header.data(), header.size());
  p += header.size();
  if (t.nbytes() > 0) std::memcpy(p, t.data(), t.nbytes());
  return out;
}

Expected<Tensor> decode_npy(const uint8_t* data, size_t size, const std::string& origin) {
  if (size < kMagicLen + 2) {
    return parse_error(fmt::format("{}: .npy magic: file is {} bytes, too short for the magic string "
                                   "and version ({} bytes)", origin, size, kMagicLen + 2));
  }
  if (std::memcmp(data, kMagic, kMagicLen) != 0) {
    return parse_error(fmt::format("{}: .npy magic: expected \\x93NUMPY, got '{}'", origin,
                                   quoted(std::string_view(reinterpret_cast<const char*>(data), kMagicLen))));
  }
  const uint8_t major = data[kMagicLen];
  const uint8_t minor = data[kMagicLen + 1];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return parse_error(fmt::format("{}: .npy version: unsupported version {}.{} (expected 1.0, 2.0 or 3.0)",
                                   origin, major, minor));
  }
  // Version 1.0 stores the header length in 2 bytes, 2.0 and 3.0 in 4.
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t header_start = kMagicLen + 2 + len_bytes;
  if (size < header_start) {
    return parse_error(fmt::format("{}: .npy header length: file is {} bytes, too short for the "
                                   "{}-byte header length field", origin, size, len_bytes));
  }
  const size_t header_len = read_le(data + kMagicLen + 2, len_bytes);
  if (header_len > size - header_start) {
    return parse_error(fmt::format("{}: .npy header length: {} bytes from offset {} run past the end "
                                   "of the file ({} bytes)", origin, header_len, header_start, size));
  }
  const std::string_view header_text(reinterpret_cast<const char*>(data + header_start), header_len);
  const std::string prefix = fmt::format("{}: .npy header: ", origin);
  OPGATE_ASSIGN_OR_RETURN(NpyHeader header, HeaderParser(header_text, prefix).parse());
  OPGATE_ASSIGN_OR_RETURN(DType dtype, dtype_from_descr(*header.descr, prefix));
  if (*header.fortran_order) {
    return parse_error(fmt::format("{}field 'fortran_order': True (Fortran order) is not supported; "
                                   "save C-order arrays", prefix));
  }
  const Shape& shape = *header.shape;
  const size_t item_size = dtype_size(dtype);
  // Multiply in uint64 with an explicit bound so hostile shapes cannot overflow or over-allocate.
  // Zero extents count as 1 in the bound, so the strides of an empty tensor stay in range too.
  uint64_t bound = item_size;
  uint64_t expected = item_size;
  for (const int64_t extent : shape) {
    const auto e = static_cast<uint64_t>(extent);
    if (__builtin_mul_overflow(bound, e == 0 ? 1 : e, &bound) ||
        bound > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return parse_error(fmt::format("{}field 'shape': {} elements of {} bytes overflow the addressable size",
                                     prefix, shape_repr(shape), item_size));
    }
    expected *= e;
  }
  const size_t data_start = header_start + header_len;
  const size_t actual = size - data_start;
  if (actual != expected) {
    return parse_error(fmt::format("{}: .npy data size: shape {} of '{}' needs {} bytes, file has {} "
                                   "after the header ({})", origin, shape_repr(shape), *header.descr,
                                   expected, actual, actual < expected ? "truncated" : "trailing bytes"));
  }
  std::vector<uint8_t> bytes(data + data_start, data + size);
  Expected<Tensor> t = Tensor::from_bytes(dtype, shape, std::move(bytes));
  if (!t) return t.status().with_context(fmt::format("{}: .npy data size", origin));
  return t;
}

Expected<Tensor> read_npy(const std::string& path) {
  OPGATE_ASSIGN_OR_RETURN(std::string bytes, read_file(path));
  return decode_npy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), path);
}

Status write_npy(const std::string& path, const Tensor& t) {
  const std::vector<uint8_t> bytes = encode_npy(t);
  return write_file_atomic(path, std::string(bytes.begin(), bytes.end()));
}

Status write_file_atomic(const std::string& path, const std::string& bytes) {
  OPGATE_ASSIGN_OR_RETURN(AtomicFileWriter out, AtomicFileWriter::open(path));
  OPGATE_TRY(out.append(bytes));
  return out.commit();
}

Expected<AtomicFileWriter> AtomicFileWriter::open(const std::string& path) {
  // The sequence number keeps two threads of one process that write the same path from sharing a
  // temporary file; the pid does the same across processes.
  static std::atomic<uint64_t> sequence{0};
  std::string tmp = fmt::format("{}.tmp.{}.{}", path, static_cast<long>(::getpid()), sequence++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error(fmt::format("{}: cannot create {}: {}", path, tmp, errno_message()));
  return AtomicFileWriter(path, std::move(tmp), fd);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& o) noexcept
    : path_(std::move(o.path_)), tmp_(std::move(o.tmp_)), fd_(o.fd_), committed_(o.committed_) {
  o.fd_ = -1;
  o.committed_ = true;  // the moved-from writer owns no temporary file
}

AtomicFileWriter::~AtomicFileWriter() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_.c_str());
}

Status AtomicFileWriter::append(const std::string& bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return io_error(fmt::format("{}: write to {} failed: {}", path_, tmp_, n < 0 ? errno_message() : "no progress"));
    written += static_cast<size_t>(n);
  }
  return Status::ok();
}

Status AtomicFileWriter::commit() {
  // close() can report deferred write errors (NFS, quota), so it is checked like write().
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return io_error(fmt::format("{}: closing {} failed: {}", path_, tmp_, errno_message()));
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    return io_error(fmt::format("{}: cannot rename {} into place: {}", path_, tmp_, errno_message()));
  }
  committed_ = true;
  return Status::ok();
}

Expected<std::string> read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return io_error(fmt::format("{}: cannot open for reading: {}", path, errno_message()));
  std::string out;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) out.append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  const std::string why = failed ? errno_message() : std::string();
  std::fclose(f);
  if (failed) return io_error(fmt::format("{}: read failed: {}", path, why));
  return out;
}

Status make_dirs(const std::string& path) {
  for (size_t i = 1; i <= path.size(); ++i) {
    if (i < path.size() && path[i] != '/') continue;
    const std::string partial = path.substr(0, i);
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return io_error(fmt::format("{}: cannot create folder: {}", partial, errno_message()));
    }
  }
  return Status::ok();
}

}  // namespace opgate
