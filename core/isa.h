// Instruction-set paths of the vectorised kernels, and the dispatch tables that choose among them.
// Each architecture has its own paths: x86-64 sse2 (its baseline), avx2 (with F16C) and avx512
// (AVX-512F); aarch64 neon (its baseline). kScalar is the plain formulation, on every architecture.
// Kernels live in files named by their ISA under an architecture folder (<layer>/x86_64/,
// <layer>/aarch64/), compiled only for that architecture (CMakeLists.txt: OPGATE_ARCH); a kernel
// family has one table of IsaRow, so a further ISA (e.g. SVE) is a new file and a new row.
// Every path of a family computes the same bits as its scalar formulation (tests compare them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace opgate {

enum class Isa : uint8_t { kScalar, kSse2, kAvx2, kAvx512, kNeon };

const char* isa_name(Isa isa);  // "scalar", "sse2", "avx2", "avx512", "neon"
std::optional<Isa> isa_from_name(std::string_view name);
// The architecture this build is for: "x86_64" or "aarch64".
const char* arch_name();
// This architecture's paths from narrowest to widest, scalar first (whether this CPU runs them or not).
const std::vector<Isa>& arch_isas();
// Whether the path is one of this architecture's and this CPU (and OS) runs it.
bool isa_supported(Isa isa);
// The supported paths, scalar first, widest last.
std::vector<Isa> supported_isas();
Isa widest_isa();

// One row of a kernel family's dispatch table.
template <class Kernels>
struct IsaRow {
  Isa isa;
  const Kernels* kernels;
};

namespace isa_detail {
// The position of `isa` in arch_isas() (-1: not this architecture's).
int rank(Isa isa);
}  // namespace isa_detail

// The kernels for `want`: its row when the table has one and the CPU runs it; otherwise the widest
// supported row not wider than `want`; otherwise the table's first row (a family whose narrowest
// path is a vector one, e.g. the emulators' GEMMs, runs it for "scalar" too).
template <class Kernels, size_t N>
const Kernels& pick(const IsaRow<Kernels> (&rows)[N], Isa want) {
  const int limit = isa_detail::rank(want);
  const IsaRow<Kernels>* best = nullptr;
  for (const IsaRow<Kernels>& row : rows) {
    if (row.isa == want && isa_supported(want)) return *row.kernels;
    if (isa_supported(row.isa) && isa_detail::rank(row.isa) <= limit &&
        (best == nullptr || isa_detail::rank(row.isa) > isa_detail::rank(best->isa))) {
      best = &row;
    }
  }
  return best != nullptr ? *best->kernels : *rows[0].kernels;
}

// The paths a table has that this CPU runs, in table order (tests iterate them).
template <class Kernels, size_t N>
std::vector<Isa> table_isas(const IsaRow<Kernels> (&rows)[N]) {
  std::vector<Isa> out;
  for (const IsaRow<Kernels>& row : rows) {
    if (isa_supported(row.isa)) out.push_back(row.isa);
  }
  return out;
}

}  // namespace opgate
