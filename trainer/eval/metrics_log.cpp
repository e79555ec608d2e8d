#include "trainer/eval/metrics_log.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

#include "common/base/error.h"
#include "common/base/files.h"

namespace tpuperf {

const char* const kMetricsHeaderV1 = "collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s";
const char* const kMetricsHeaderV2 =
    "collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s,slowdown_1,slowdown_5,slowdown_10";
const char* const kMetricsHeader =
    "collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s,slowdown_1,slowdown_5,slowdown_10,"
    "slowdown_5_own";

namespace {

std::string csv_number(double v) {
  if (std::isnan(v)) return "";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.10g", v);
  return buf;
}

void check_field(const std::string& s, const std::string& path, const char* what) {
  if (s.find_first_of(",\n\r") != std::string::npos)
    throw Error(std::string(what) + " '" + s + "' holds a comma or a line break", path);
}

// The columns of a file: its header's version (1: kMetricsHeaderV1, 2: kMetricsHeaderV2,
// 3: kMetricsHeader), 0 for an unknown header.
int header_version(const std::string& line) {
  if (line == kMetricsHeader) return 3;
  if (line == kMetricsHeaderV2) return 2;
  if (line == kMetricsHeaderV1) return 1;
  return 0;
}

// A row in the columns of `version` (an earlier one: a file an earlier run began).
std::string csv_line(const MetricsRow& r, int version) {
  std::string line = r.collection + "," + std::to_string(r.fold) + "," + std::to_string(r.epoch) + "," +
                     std::to_string(r.step) + "," + r.split + "," + csv_number(r.loss) + "," + csv_number(r.score) +
                     "," + csv_number(r.configs_per_s) + "," + csv_number(r.elapsed_s);
  if (version >= 2)
    for (double v : r.slowdown) line += "," + csv_number(v);
  if (version >= 3) line += "," + csv_number(r.slowdown_5_own);
  return line + "\n";
}

// The header line of an existing file ("" when it is missing or empty).
std::string first_line(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return "";
  char buf[256] = {};
  const bool got = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  std::string line = got ? buf : "";
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return line;
}

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    const size_t len = comma == std::string::npos ? std::string::npos : comma - start;
    out.push_back(line.substr(start, len));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

int64_t parse_int(const std::string& s, const char* column) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0)
    throw Error(std::string("column ") + column + ": '" + s + "' is not an integer");
  return v;
}

double parse_double(const std::string& s, const char* column) {
  if (s.empty()) return MetricsRow::kNone;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0')
    throw Error(std::string("column ") + column + ": '" + s + "' is not a number");
  return v;
}

MetricsRow parse_row(const std::string& line, int version) {
  const auto f = split_fields(line);
  const size_t expected = version == 1 ? 9 : version == 2 ? 12 : 13;
  if (f.size() != expected)
    throw Error(std::to_string(f.size()) + " fields, expected " + std::to_string(expected) + " (" +
                (version == 1 ? kMetricsHeaderV1 : version == 2 ? kMetricsHeaderV2 : kMetricsHeader) + ")");
  MetricsRow r;
  r.collection = f[0];
  r.fold = static_cast<int>(parse_int(f[1], "fold"));
  r.epoch = static_cast<int>(parse_int(f[2], "epoch"));
  r.step = parse_int(f[3], "step");
  r.split = f[4];
  if (r.split != "train" && r.split != "oof" && r.split != "valid")
    throw Error("column split: '" + r.split + "' is not train, oof or valid");
  r.loss = parse_double(f[5], "loss");
  r.score = parse_double(f[6], "score");
  r.configs_per_s = parse_double(f[7], "configs_per_s");
  r.elapsed_s = parse_double(f[8], "elapsed_s");
  static const char* const kSlowdownColumns[] = {"slowdown_1", "slowdown_5", "slowdown_10"};
  if (version >= 2)
    for (size_t k = 0; k < r.slowdown.size(); ++k) r.slowdown[k] = parse_double(f[9 + k], kSlowdownColumns[k]);
  if (version >= 3) r.slowdown_5_own = parse_double(f[12], "slowdown_5_own");
  return r;
}

}  // namespace

std::string format_value(double v, int decimals) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

double mean_finite(const std::vector<double>& v) {
  double sum = 0.0;
  int n = 0;
  for (double x : v)
    if (!std::isnan(x)) sum += x, ++n;
  return n ? sum / n : MetricsRow::kNone;
}

void append_metrics(const std::string& path, const std::vector<MetricsRow>& rows) {
  struct stat st {};
  const bool fresh = ::stat(path.c_str(), &st) != 0 || st.st_size == 0;
  // A run resumed across a change of the columns appends in its file's own columns.
  const int own = fresh ? 3 : header_version(first_line(path));
  const int version = own == 0 ? 3 : own;
  std::string text;
  for (const auto& r : rows) {
    check_field(r.collection, path, "collection");
    check_field(r.split, path, "split");
    text += csv_line(r, version);
  }
  if (fresh) text = std::string(kMetricsHeader) + "\n" + text;
  FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw Error(std::string("cannot open for appending: ") + std::strerror(errno), path);
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  const int err = errno;
  if (std::fclose(f) != 0 || !ok)
    throw Error(std::string("write failed: ") + std::strerror(ok ? errno : err), path);
}

std::vector<MetricsRow> parse_metrics(const std::string& text, const std::string& path) {
  std::vector<MetricsRow> rows;
  std::istringstream in(text);
  std::string line;
  size_t line_no = 0;
  int version = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1) {
      version = header_version(line);
      if (version == 0)
        throw Error("line 1: header is '" + line + "', expected '" + kMetricsHeader + "'", path);
      continue;
    }
    if (line.empty()) continue;
    try {
      rows.push_back(parse_row(line, version));
    } catch (const Error& e) {
      throw Error("line " + std::to_string(line_no) + ": " + e.reason(), path);
    }
  }
  if (line_no == 0) throw Error("empty file, expected the header", path);
  return rows;
}

std::vector<MetricsRow> read_metrics(const std::string& path) {
  return parse_metrics(read_text_file(path), path);
}

std::map<int, const MetricsRow*> kept_oof_rows(const std::vector<MetricsRow>& rows, const std::string& collection) {
  std::map<int, const MetricsRow*> kept;  // fold -> its best oof row (the first of equals)
  for (const auto& r : rows) {
    if (r.collection != collection || r.split != "oof" || std::isnan(r.score) || r.fold < 0) continue;
    auto it = kept.find(r.fold);
    if (it == kept.end() || r.score > it->second->score) kept[r.fold] = &r;
  }
  return kept;
}

double cv_score(const std::vector<MetricsRow>& rows, const std::string& collection) {
  std::vector<double> scores;
  for (const auto& [fold, r] : kept_oof_rows(rows, collection)) scores.push_back(r->score);
  return mean_finite(scores);
}

}  // namespace tpuperf
