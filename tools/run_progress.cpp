#include "tools/run_progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <system_error>

#include <fmt/format.h>

namespace opgate::cli {
namespace {

constexpr auto kRedraw = std::chrono::seconds(1);
constexpr auto kPlainEvery = std::chrono::seconds(30);

std::string clock_text(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

}  // namespace

ProgressStyle progress_style(bool stdout_is_tty, bool no_color_set, bool ci_set) {
  return stdout_is_tty && !no_color_set && !ci_set ? ProgressStyle::kLine : ProgressStyle::kPlain;
}

ProgressStyle progress_style_of_this_process() {
  return progress_style(isatty(STDOUT_FILENO) == 1, std::getenv("NO_COLOR") != nullptr, std::getenv("CI") != nullptr);
}

std::optional<double> eta_seconds(double elapsed_s, double done_weight, double total_weight) {
  if (done_weight <= 0 || elapsed_s <= 0) return std::nullopt;
  return elapsed_s / done_weight * std::max(0.0, total_weight - done_weight);
}

std::string progress_text(size_t done, size_t total, int failures, double elapsed_s, std::optional<double> eta) {
  const int width = static_cast<int>(std::to_string(total).size());
  std::string s = fmt::format("[{:>{}}/{}] {} failing, {} elapsed", done, width, total, failures, clock_text(elapsed_s));
  if (eta && done < total) s += fmt::format(", about {} left", clock_text(*eta));
  return s;
}

double case_weight(double tensor_bytes) { return std::max(0.0, tensor_bytes) + 4.0 * 1024 * 1024; }

Progress::Progress(ProgressStyle style, std::vector<double> weights, const std::vector<bool>& done)
    : style_(style), weights_(std::move(weights)) {
  for (size_t k = 0; k < weights_.size(); ++k) {
    if (k < done.size() && done[k]) {
      ++done_;
    } else {
      total_weight_ += weights_[k];
    }
  }
  try {
    ticker_ = std::thread([this] { tick(); });
  } catch (const std::system_error&) {
    // No thread to spare (a thread limit): the progress line is redrawn only as cases end.
  }
}

Progress::~Progress() {
  {
    const std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    clear_locked();
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void Progress::print(const std::string& text) {
  const std::lock_guard<std::mutex> lock(mu_);
  clear_locked();
  std::fputs(text.c_str(), stdout);
  draw_locked();
}

void Progress::finished(size_t k, bool failed) {
  const std::lock_guard<std::mutex> lock(mu_);
  ++done_;
  failures_ += failed ? 1 : 0;
  if (k < weights_.size()) done_weight_ += weights_[k];
  draw_locked();
}

void Progress::tick() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, kRedraw);
    if (stopping_) break;
    if (style_ == ProgressStyle::kLine) {
      draw_locked();
    } else if (std::chrono::steady_clock::now() - last_plain_ >= kPlainEvery) {
      last_plain_ = std::chrono::steady_clock::now();
      std::fputs(fmt::format("progress: {}\n", text_locked()).c_str(), stdout);
      std::fflush(stdout);
    }
  }
}

std::string Progress::text_locked() const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return progress_text(done_, weights_.size(), failures_, elapsed, eta_seconds(elapsed, done_weight_, total_weight_));
}

// "\r\033[K" returns to the line's start and erases it: the line is redrawn in place.
void Progress::draw_locked() {
  if (style_ != ProgressStyle::kLine || stopping_) {
    std::fflush(stdout);
    return;
  }
  std::fputs(fmt::format("\r\033[K{}", text_locked()).c_str(), stdout);
  line_shown_ = true;
  std::fflush(stdout);
}

void Progress::clear_locked() {
  if (!line_shown_) return;
  std::fputs("\r\033[K", stdout);
  line_shown_ = false;
}

}  // namespace opgate::cli
