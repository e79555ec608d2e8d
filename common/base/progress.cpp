#include "common/base/progress.h"

#include <sys/resource.h>

#include <cmath>
#include <cstdio>

#include "common/base/log.h"

namespace tpuperf {

std::string format_duration(double seconds, int decimals) {
  if (std::isnan(seconds)) return "n/a";
  if (seconds < 0) seconds = 0;
  char buf[64];
  const double scale = std::pow(10.0, decimals);
  if (decimals > 0 && std::round(seconds * scale) / scale < 60) {
    std::snprintf(buf, sizeof buf, "%.*fs", decimals, seconds);
    return buf;
  }
  long s = static_cast<long>(seconds + 0.5);
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", s);
  return buf;
}

double peak_rss_mb() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;  // Linux reports kilobytes
}

Progress::Progress(std::string label, int64_t total_items, int64_t total_bytes, double interval_s,
                   std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_items_(total_items),
      total_bytes_(total_bytes),
      interval_s_(interval_s),
      start_(Clock::now()),
      last_log_(start_) {}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string Progress::line() const {
  double t = elapsed_s();
  double items_per_s = t > 0 ? done_items_ / t : 0;
  // ETA by bytes when sizes are known (items vary a lot in size), else by items.
  double frac = total_bytes_ > 0 ? double(done_bytes_) / total_bytes_
                                 : (total_items_ > 0 ? double(done_items_) / total_items_ : 1);
  std::string eta = frac > 0 ? format_duration(t / frac - t) : "?";
  return fmt::format("{}: {}/{} {} ({:.0f}%), {:.1f} {}/s{}, elapsed {}, ETA {}", label_, done_items_, total_items_,
                     unit_, 100 * frac, items_per_s, unit_, mb_rate(t), format_duration(t), eta);
}

void Progress::tick(int64_t bytes) {
  ++done_items_;
  done_bytes_ += bytes;
  auto now = Clock::now();
  if (std::chrono::duration<double>(now - last_log_).count() >= interval_s_) {
    last_log_ = now;
    spdlog::info("{}", line());
  }
}

void Progress::finish() {
  double t = elapsed_s();
  const std::string mb = total_bytes_ > 0 ? fmt::format(", {:.1f} MB", done_bytes_ / kBytesPerMB) : "";
  spdlog::info("{}: done, {} {}{} in {} ({:.1f} {}/s{})", label_, done_items_, unit_, mb, format_duration(t),
               t > 0 ? done_items_ / t : 0.0, unit_, mb_rate(t));
}

std::string Progress::mb_rate(double t) const {
  if (total_bytes_ <= 0) return "";
  return fmt::format(", {:.1f} MB/s", t > 0 ? done_bytes_ / kBytesPerMB / t : 0.0);
}

}  // namespace tpuperf
