// The scalar formulation of Philox4x32-10 over runs of counters, the dispatch table over the ISA
// paths (core/<arch>/philox_lanes_<isa>.cpp: AVX2, AVX-512, NEON) and the choice of path. Every
// path computes the same 32-bit words (tests compare each with the scalar one bit for bit).

#include "core/philox_lanes.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "core/status.h"

namespace opgate {
namespace philox_lanes {
namespace {

void reduce_lane(Reduce reduce, uint32_t w0, uint32_t w1, uint32_t w2, uint32_t w3, uint64_t& out) {
  if (reduce == Reduce::kLow64) {
    out = static_cast<uint64_t>(w0) | (static_cast<uint64_t>(w1) << 32);
  } else {
    out += static_cast<uint64_t>(w0) + w1 + w2 + w3;
  }
}

const Kernels kScalarKernels = {run_scalar};

// One row per path of this architecture (OPGATE_ARCH_*: the files CMake compiles). SSE2 has no
// row (its multiplies lack the AVX2 blends): on that path the scalar code runs.
const IsaRow<Kernels> kRows[] = {
    {Isa::kScalar, &kScalarKernels},
#if OPGATE_ARCH_X86_64
    {Isa::kAvx2, &paths::avx2},
    {Isa::kAvx512, &paths::avx512},
#elif OPGATE_ARCH_AARCH64
    {Isa::kNeon, &paths::neon},
#endif
};

// The path of the row pick() chooses for `want`.
RngPath row_path(Isa want) {
  const Kernels* k = &pick(kRows, want);
  for (const IsaRow<Kernels>& row : kRows) {
    if (row.kernels == k) return row.isa;
  }
  return Isa::kScalar;
}

RngPath default_path() {
  // OPGATE_ISA pins the path like the references' (core/isa.h names; results are the same on all).
  const char* env = std::getenv("OPGATE_ISA");
  const std::optional<Isa> named = env != nullptr ? isa_from_name(env) : std::nullopt;
  return row_path(named && isa_supported(*named) ? *named : widest_isa());
}

std::atomic<RngPath>& current_path() {
  static std::atomic<RngPath> path{default_path()};
  return path;
}

}  // namespace

void run_scalar(uint64_t key, uint64_t stream, uint64_t first, int64_t n, Reduce reduce, uint64_t* out) {
  const std::array<uint32_t, 2> k = {static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)};
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t index = first + static_cast<uint64_t>(i);
    const std::array<uint32_t, 4> w =
        philox4x32_10({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                       static_cast<uint32_t>(stream), static_cast<uint32_t>(stream >> 32)},
                      k);
    reduce_lane(reduce, w[0], w[1], w[2], w[3], out[i]);
  }
}

void run(RngPath path, uint64_t key, uint64_t stream, uint64_t first, int64_t n, Reduce reduce, uint64_t* out) {
  pick(kRows, path).run(key, stream, first, n, reduce, out);
}

}  // namespace philox_lanes

const char* rng_path_name(RngPath path) { return isa_name(path); }

bool rng_path_supported(RngPath path) {
  for (const IsaRow<philox_lanes::Kernels>& row : philox_lanes::kRows) {
    if (row.isa == path) return isa_supported(path);
  }
  return false;
}

std::vector<RngPath> rng_paths() { return table_isas(philox_lanes::kRows); }

RngPath rng_path() { return philox_lanes::current_path().load(std::memory_order_relaxed); }

void set_rng_path(RngPath path) {
  OPGATE_CHECK(rng_path_supported(path), fmt::format("this build or CPU has no {} path for the RNG", rng_path_name(path)));
  philox_lanes::current_path().store(path, std::memory_order_relaxed);
}

}  // namespace opgate
