// The machine's limits, measured in the benchmark's own process (issue 15 part 3): a copy-bandwidth
// probe and a peak-flops probe, both on math::threads() threads, so every benchmark reports what it
// achieved as a fraction of what this machine, in this run, with this load, can do.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>

namespace opgate::bench {

struct Limits {
  double copy_gbs = 0;      // bytes read + bytes written per second by memcpy over 256 MiB
  double peak_gflops = 0;   // double flops per second of independent FMA chains (widest ISA)
  double nofma_gflops = 0;  // the same with separate multiply and add (what a reference may use), widest ISA
};

// Measured once per process, on first use (best of 3 runs of each probe).
const Limits& machine_limits();

// Runs fn once per benchmark iteration, timing each call, and sets the counters: seconds per call
// (wall, and cpu_s_per_call: CPU seconds of all threads),
// GB/s and GFLOP/s achieved (of `bytes` and `flops` per call; 0 = not reported) and their fractions
// of the measured limits (frac_bw, frac_peak).
void measure(benchmark::State& state, double bytes, double flops, const std::function<void()>& fn);

// Seconds per call of fn, best of `runs` (for peers timed inside another benchmark).
double best_seconds(int runs, const std::function<void()>& fn);

}  // namespace opgate::bench
