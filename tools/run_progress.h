// The progress of `opgate run`: cases done of total, failures so far and an estimate of the time
// left. On a terminal it is one line at the bottom, redrawn in place every second (so the clock
// moves during a long case) with the verdict lines printed above it; in a log (stdout not a tty,
// or NO_COLOR / CI set) it is a plain line every 30 s, so a CI log shows the run is alive.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace opgate::cli {

enum class ProgressStyle { kLine, kPlain };

// kLine only on a terminal without NO_COLOR or CI in the environment (any value, even empty:
// https://no-color.org asks for presence).
ProgressStyle progress_style(bool stdout_is_tty, bool no_color_set, bool ci_set);
ProgressStyle progress_style_of_this_process();

// Seconds left: the weight still to run at the pace of the weight done so far (seconds per unit).
// nullopt until some weight is done.
std::optional<double> eta_seconds(double elapsed_s, double done_weight, double total_weight);

// "[  12/222] 3 failing, 0:41 elapsed, about 2:10 left" (no "left" part without an estimate).
std::string progress_text(size_t done, size_t total, int failures, double elapsed_s, std::optional<double> eta);

// A case's weight for the estimate: its tensor bytes plus a fixed 4 MiB for what every case costs
// (a child process, reports), so a run of tiny cases still has a pace.
double case_weight(double tensor_bytes);

class Progress {
 public:
  // `weights[k]` of case k; `done[k]` for cases a resumed report already holds (counted as done,
  // not in the pace).
  Progress(ProgressStyle style, std::vector<double> weights, const std::vector<bool>& done);
  ~Progress();  // stops the ticker and clears the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Text (whole lines) printed above the progress line.
  void print(const std::string& text);
  // Case k's result was taken; `failed` counts towards the failures shown.
  void finished(size_t k, bool failed);

 private:
  void tick();
  void draw_locked();
  void clear_locked();
  std::string text_locked() const;

  const ProgressStyle style_;
  const std::vector<double> weights_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_plain_ = start_;
  double total_weight_ = 0, done_weight_ = 0;
  size_t done_ = 0;
  int failures_ = 0;
  bool line_shown_ = false, stopping_ = false;
  std::mutex mu_;
  std::condition_variable wake_;
  std::thread ticker_;
};

}  // namespace opgate::cli
