// Progress lines for long work: done/total items, items/s, MB/s and ETA, logged at most
// every `interval` seconds (and once at the end), so a user always sees that work moves
// and how long it will take.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tpuperf {

// A progress line at most this often: frequent enough to see work move, rare enough for
// a readable log of a day-long run.
constexpr double kProgressIntervalSeconds = 5.0;
// MB in logs and settings (preprocess.shard_mb) is 10^6 bytes.
constexpr double kBytesPerMB = 1e6;

class Progress {
 public:
  // unit names the items ("files", "steps"); MB/s is shown only when total_bytes > 0.
  Progress(std::string label, int64_t total_items, int64_t total_bytes,
           double interval_s = kProgressIntervalSeconds, std::string unit = "files");
  // One item done, of `bytes` input bytes.
  void tick(int64_t bytes);
  // Logs the closing line (totals, overall rates).
  void finish();

  double elapsed_s() const;
  int64_t done_items() const { return done_items_; }
  int64_t done_bytes() const { return done_bytes_; }
  std::string line() const;

 private:
  using Clock = std::chrono::steady_clock;
  // ", x MB/s" over t seconds, or "" for work not measured in bytes.
  std::string mb_rate(double t) const;
  std::string label_, unit_;
  int64_t total_items_, total_bytes_;
  int64_t done_items_ = 0, done_bytes_ = 0;
  double interval_s_;
  Clock::time_point start_, last_log_;
};

// "1h02m", "3m05s", "42s"; under a minute with `decimals` digits ("42.4s" for 1); "n/a"
// for NaN (not measured), negative durations as 0.
std::string format_duration(double seconds, int decimals = 0);

// Peak resident memory of this process so far, in MB (getrusage).
double peak_rss_mb();

}  // namespace tpuperf
