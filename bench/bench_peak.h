// The peak-flops probes of bench_limits.cpp, one file per architecture (bench/<arch>/bench_peak.cpp,
// compiled only for that architecture): chains of independent double multiply-adds on one thread.
#pragma once

#include <cstdint>
#include <vector>

namespace opgate::bench {

// Runs its chains on the calling thread and returns the flops it did.
using Chains = double (*)();

// The probes this CPU runs: fused multiply-add chains (the machine's peak) and separate multiply
// and add chains (the references' own ceiling: they are compiled without FMA), widest last.
std::vector<Chains> fma_chains();
std::vector<Chains> nofma_chains();

}  // namespace opgate::bench
