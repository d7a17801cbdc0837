// NumPy .npy files, format version 1.0, C order, little-endian (golden-format.md "Tensor files").
// bfloat16 has no NumPy dtype: it is written as '<u2'; the caller reinterprets on reading.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace opgate {

// The NumPy descr string of a dtype: '<f8' '<f4' '<f2' '<u2'(bf16) '|i1' '|u1' '<i4' '<i8' '<u8' '|b1'.
const char* npy_descr(DType t);
// Serialises to the exact bytes of a .npy file (header padded to a multiple of 64 bytes).
std::vector<uint8_t> encode_npy(const Tensor& t);
// Parses .npy bytes; `origin` (a path) prefixes every error, which names the offending header
// field: magic, version, header length, descr, fortran_order, shape, or data size.
Expected<Tensor> decode_npy(const uint8_t* data, size_t size, const std::string& origin);
Expected<Tensor> read_npy(const std::string& path);
// Writes atomically: a temporary file in the same folder, then rename.
Status write_npy(const std::string& path, const Tensor& t);

// Writes `bytes` to `path` atomically (temporary name + rename); shared by every file writer.
Status write_file_atomic(const std::string& path, const std::string& bytes);

// The same, for a file written in pieces (a file larger than what should sit in memory at once):
// the pieces go to the temporary file, commit() renames it into place; destroyed uncommitted (an
// error, an exception), it removes the temporary file and `path` is untouched.
class AtomicFileWriter {
 public:
  static Expected<AtomicFileWriter> open(const std::string& path);
  AtomicFileWriter(AtomicFileWriter&& o) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  ~AtomicFileWriter();
  Status append(const std::string& bytes);
  Status commit();

 private:
  AtomicFileWriter(std::string path, std::string tmp, int fd) : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};
Expected<std::string> read_file(const std::string& path);
// Creates `path` and its missing parents (like mkdir -p).
Status make_dirs(const std::string& path);

}  // namespace opgate
