// The project's one parallel loop (issue 15 part 2). References, emulators and fills split their
// work into independent output blocks and call parallel_for; the thread count is a process-wide
// setting (`opgate run --threads N`, or OPGATE_THREADS; default: the cores). Every index is computed
// by the same code whichever thread runs it, so results never depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>

namespace opgate::math {

// Threads parallel_for may use: the last set_threads value, else OPGATE_THREADS when it is a
// positive integer, else std::thread::hardware_concurrency() (at least 1).
int64_t threads();

// Sets the thread count for later parallel_for calls; n <= 0 restores the default.
void set_threads(int64_t n);

// Parses an OPGATE_THREADS / --threads value: a positive integer, or -1 when it is not one.
int64_t parse_threads(const char* text);

// Calls fn(i) once for every i in [0, n), spread over up to threads() threads (fewer when n is
// small or `min_per_thread` indices would not fill a thread). Indices are handed out one at a time
// (dynamic scheduling), so blocks of unequal cost balance. fn must only write outputs owned by
// index i. A parallel_for called from inside fn runs serially on the calling thread.
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int64_t min_per_thread = 1);

}  // namespace opgate::math
