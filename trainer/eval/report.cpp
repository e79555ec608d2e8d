#include "trainer/eval/report.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/files.h"
#include "common/progress.h"

namespace tpuperf {

const char* const kMetricsHeader =
    "collection,fold,epoch,step,split,loss,score,configs_per_s,elapsed_s";

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------- metrics.csv

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

std::string csv_line(const MetricsRow& r) {
  return r.collection + "," + std::to_string(r.fold) + "," + std::to_string(r.epoch) + "," +
         std::to_string(r.step) + "," + r.split + "," + csv_number(r.loss) + "," +
         csv_number(r.score) + "," + csv_number(r.configs_per_s) + "," +
         csv_number(r.elapsed_s) + "\n";
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
  if (s.empty()) return kNaN;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0')
    throw Error(std::string("column ") + column + ": '" + s + "' is not a number");
  return v;
}

MetricsRow parse_row(const std::string& line) {
  const auto f = split_fields(line);
  if (f.size() != 9)
    throw Error(std::to_string(f.size()) + " fields, expected 9 (" + kMetricsHeader + ")");
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
  return r;
}

// ---------------------------------------------------------------- numbers as text

std::string fixed(double v, int decimals = 4) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string throughput(double v) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.1f", v);
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

double mean_finite(const std::vector<double>& v) {
  double sum = 0.0;
  int n = 0;
  for (double x : v)
    if (!std::isnan(x)) sum += x, ++n;
  return n ? sum / n : kNaN;
}

// ---------------------------------------------------------------- curves

using Points = std::map<int, std::vector<double>>;  // epoch -> values seen

struct Series {
  int fold = 0;
  bool dashed = false;
  std::vector<std::pair<double, double>> pts;  // (epoch, value), epochs ascending
};

// One series per fold: the mean per epoch of the given value over the rows of `split`.
std::vector<Series> collect(const std::vector<MetricsRow>& rows, const std::string& collection,
                            const std::string& split, bool use_loss, bool dashed) {
  std::map<int, Points> by_fold;
  for (const auto& r : rows) {
    if (r.collection != collection || r.split != split) continue;
    const double v = use_loss ? r.loss : r.score;
    if (!std::isnan(v)) by_fold[r.fold][r.epoch].push_back(v);
  }
  std::vector<Series> out;
  for (const auto& [fold, epochs] : by_fold) {
    Series s;
    s.fold = fold;
    s.dashed = dashed;
    for (const auto& [epoch, values] : epochs) s.pts.emplace_back(epoch, mean_finite(values));
    out.push_back(s);
  }
  return out;
}

const char* fold_color(int fold) {
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  if (fold < 0) return "#000000";  // the ensemble
  return palette[fold % 10];
}

std::string fold_name(int fold) { return fold < 0 ? "ensemble" : "fold " + std::to_string(fold); }

// A readable tick spacing: 1, 2 or 5 times a power of ten, about `target` ticks.
double nice_step(double range, int target) {
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

struct Axis {
  double lo = 0, hi = 1, step = 1;
  int decimals = 0;
  void fit(double min, double max, bool integer) {
    if (!(max - min > 1e-12 * std::max(1.0, std::fabs(max)))) {
      const double pad = integer ? 1.0 : (std::fabs(max) > 0 ? std::fabs(max) * 0.05 : 1.0);
      min -= pad;
      max += pad;
    }
    step = nice_step(max - min, 5);
    if (integer) step = std::max(1.0, std::round(step));
    lo = std::floor(min / step + 1e-9) * step;
    hi = std::ceil(max / step - 1e-9) * step;
    decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    const auto n = static_cast<int>(std::llround((hi - lo) / step));
    for (int i = 0; i <= n; ++i) t.push_back(lo + i * step);
    return t;
  }
};

struct Panel {
  double x, y, w, h;  // plot area in SVG pixels
  std::string title, ylabel;
};

void draw_panel(std::ostringstream& svg, const Panel& p, const std::vector<Series>& series) {
  svg << "<text x=\"" << p.x + p.w / 2 << "\" y=\"" << p.y - 10
      << "\" text-anchor=\"middle\" font-size=\"13\">" << xml_escape(p.title) << "</text>\n";
  svg << "<rect x=\"" << p.x << "\" y=\"" << p.y << "\" width=\"" << p.w << "\" height=\"" << p.h
      << "\" fill=\"none\" stroke=\"#000000\"/>\n";
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (const auto& s : series)
    for (const auto& [x, y] : s.pts) {
      xmin = std::min(xmin, x), xmax = std::max(xmax, x);
      ymin = std::min(ymin, y), ymax = std::max(ymax, y);
    }
  if (xmin > xmax) {
    svg << "<text x=\"" << p.x + p.w / 2 << "\" y=\"" << p.y + p.h / 2
        << "\" text-anchor=\"middle\" font-size=\"12\" fill=\"#555555\">no data</text>\n";
    return;
  }
  Axis ax, ay;
  ax.fit(xmin, xmax, true);
  ay.fit(ymin, ymax, false);
  auto px = [&](double x) { return p.x + (x - ax.lo) / (ax.hi - ax.lo) * p.w; };
  auto py = [&](double y) { return p.y + p.h - (y - ay.lo) / (ay.hi - ay.lo) * p.h; };
  for (double t : ax.ticks()) {
    svg << "<line x1=\"" << px(t) << "\" y1=\"" << p.y << "\" x2=\"" << px(t) << "\" y2=\""
        << p.y + p.h + 4 << "\" stroke=\"#dddddd\"/>\n";
    svg << "<text x=\"" << px(t) << "\" y=\"" << p.y + p.h + 17
        << "\" text-anchor=\"middle\" font-size=\"11\">" << fixed(t, ax.decimals) << "</text>\n";
  }
  for (double t : ay.ticks()) {
    svg << "<line x1=\"" << p.x - 4 << "\" y1=\"" << py(t) << "\" x2=\"" << p.x + p.w
        << "\" y2=\"" << py(t) << "\" stroke=\"#dddddd\"/>\n";
    svg << "<text x=\"" << p.x - 7 << "\" y=\"" << py(t) + 4
        << "\" text-anchor=\"end\" font-size=\"11\">" << fixed(t, ay.decimals) << "</text>\n";
  }
  svg << "<text x=\"" << p.x + p.w / 2 << "\" y=\"" << p.y + p.h + 36
      << "\" text-anchor=\"middle\" font-size=\"12\">epoch</text>\n";
  svg << "<text transform=\"translate(" << p.x - 52 << "," << p.y + p.h / 2
      << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">" << xml_escape(p.ylabel)
      << "</text>\n";
  for (const auto& s : series) {
    const char* color = fold_color(s.fold);
    if (s.pts.size() > 1) {
      svg << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\""
          << (s.dashed ? " stroke-dasharray=\"6,4\"" : "") << " points=\"";
      for (const auto& [x, y] : s.pts) svg << px(x) << "," << py(y) << " ";
      svg << "\"/>\n";
    }
    for (const auto& [x, y] : s.pts)
      svg << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"3\" fill=\""
          << (s.dashed ? "#ffffff" : color) << "\" stroke=\"" << color << "\"/>\n";
  }
}

// Legend: one swatch per fold, then what solid and dashed lines mean.
double draw_legend(std::ostringstream& svg, const std::set<int>& folds, double top, double width) {
  std::vector<std::pair<std::string, std::string>> items;  // label, swatch style
  for (int f : folds)
    items.emplace_back(fold_name(f), std::string("stroke=\"") + fold_color(f) + "\"");
  items.emplace_back("oof (held-out fold)", "stroke=\"#444444\"");
  items.emplace_back("valid", "stroke=\"#444444\" stroke-dasharray=\"6,4\"");
  const double item_w = 150, left = 70;
  const int per_row = std::max(1, static_cast<int>((width - left) / item_w));
  for (size_t i = 0; i < items.size(); ++i) {
    const double x = left + static_cast<double>(i % per_row) * item_w;
    const double y = top + static_cast<double>(i / per_row) * 20;
    svg << "<line x1=\"" << x << "\" y1=\"" << y << "\" x2=\"" << x + 28 << "\" y2=\"" << y
        << "\" stroke-width=\"2\" " << items[i].second << "/>\n";
    svg << "<text x=\"" << x + 34 << "\" y=\"" << y + 4 << "\" font-size=\"12\">"
        << xml_escape(items[i].first) << "</text>\n";
  }
  return top + static_cast<double>((items.size() + per_row - 1) / per_row) * 20;
}

// ---------------------------------------------------------------- report.md

std::vector<std::string> report_collections(const ReportInput& in) {
  std::vector<std::string> ids;
  for (const auto& c : in.collections) ids.push_back(c.collection);
  std::set<std::string> extra;
  for (const auto& r : in.metrics)
    if (std::find(ids.begin(), ids.end(), r.collection) == ids.end()) extra.insert(r.collection);
  ids.insert(ids.end(), extra.begin(), extra.end());
  return ids;
}

CollectionReport find_report(const ReportInput& in, const std::string& id) {
  for (const auto& c : in.collections)
    if (c.collection == id) return c;
  CollectionReport none;
  none.collection = id;
  return none;
}

std::string join_scores(const std::vector<double>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? " / " : "") + fixed(v[i]);
  return out.empty() ? "n/a" : out;
}

void summary_table(std::ostringstream& md, const ReportInput& in,
                   const std::vector<std::string>& ids) {
  bool any_test = false;
  for (const auto& c : in.collections) any_test = any_test || !std::isnan(c.test_score);
  md << "| collection | CV (oof) | valid: ensemble | valid: fold models | valid: random | "
        "valid: default-first | valid graphs |"
     << (any_test ? " test |" : "") << " train time | configs/s |\n"
     << "|---|---:|---:|---:|---:|---:|---:|" << (any_test ? "---:|" : "") << "---:|---:|\n";
  std::vector<double> cv, ens, rnd, dflt, test;
  int64_t graphs = 0;
  double seconds = 0;
  bool all_default = true;
  for (const auto& id : ids) {
    const CollectionReport c = find_report(in, id);
    md << "| " << id << " | " << fixed(c.cv_score) << " | " << fixed(c.valid_ensemble) << " | "
       << join_scores(c.valid_per_fold) << " | " << fixed(c.valid_random) << " | "
       << fixed(c.valid_default_first) << " | " << c.valid_graphs << " |"
       << (any_test ? " " + fixed(c.test_score) + " |" : "") << " " << format_duration(c.train_seconds, 1)
       << " | " << throughput(c.configs_per_s) << " |\n";
    cv.push_back(c.cv_score), ens.push_back(c.valid_ensemble), rnd.push_back(c.valid_random);
    dflt.push_back(c.valid_default_first), test.push_back(c.test_score);
    all_default = all_default && !std::isnan(c.valid_default_first);
    graphs += c.valid_graphs;
    if (!std::isnan(c.train_seconds)) seconds += c.train_seconds;
  }
  md << "| **overall** | " << fixed(mean_finite(cv)) << " | " << fixed(mean_finite(ens))
     << " | | " << fixed(mean_finite(rnd)) << " | "
     << (all_default ? fixed(mean_finite(dflt)) : "n/a") << " | " << graphs << " |"
     << (any_test ? " " + fixed(mean_finite(test)) + " |" : "") << " " << format_duration(seconds, 1)
     << " | |\n\n";
}

// Per fold: epochs trained, the last train loss, the kept epoch (best oof) with its oof
// score, and the kept model's valid score.
void fold_table(std::ostringstream& md, const ReportInput& in, const CollectionReport& c) {
  struct Last {
    int epochs = 0;
    int loss_epoch = -1, oof_epoch = -1, valid_epoch = -1;  // oof_epoch: the best oof's
    std::vector<double> loss;
    double oof = kNaN, valid = kNaN;
  };
  std::map<int, Last> folds;
  for (const auto& r : in.metrics) {
    if (r.collection != c.collection) continue;
    Last& l = folds[r.fold];
    l.epochs = std::max(l.epochs, r.epoch);
    if (r.split == "train" && !std::isnan(r.loss) && r.epoch >= l.loss_epoch) {
      if (r.epoch > l.loss_epoch) l.loss.clear();
      l.loss_epoch = r.epoch;
      l.loss.push_back(r.loss);
    } else if (r.split == "oof" && !std::isnan(r.score) && (l.oof_epoch < 0 || r.score > l.oof)) {
      l.oof_epoch = r.epoch, l.oof = r.score;
    } else if (r.split == "valid" && !std::isnan(r.score) && r.epoch >= l.valid_epoch) {
      l.valid_epoch = r.epoch, l.valid = r.score;
    }
  }
  if (folds.empty()) {
    md << "No metrics rows for this collection.\n\n";
    return;
  }
  md << "| fold | epochs | final train loss | kept epoch (best oof) | its oof score | "
        "valid score (kept model) |\n"
     << "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [fold, l] : folds) {
    double valid = l.valid;
    if (fold >= 0 && static_cast<size_t>(fold) < c.valid_per_fold.size() &&
        !std::isnan(c.valid_per_fold[static_cast<size_t>(fold)]))
      valid = c.valid_per_fold[static_cast<size_t>(fold)];
    md << "| " << fold_name(fold) << " | " << l.epochs << " | " << fixed(mean_finite(l.loss))
       << " | " << (l.oof_epoch < 0 ? "n/a" : std::to_string(l.oof_epoch)) << " | " << fixed(l.oof)
       << " | " << fixed(valid) << " |\n";
  }
  md << "\n";
}

bool has_rows(const std::vector<MetricsRow>& rows, const std::string& collection) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const MetricsRow& r) { return r.collection == collection; });
}

}  // namespace

void append_metrics(const std::string& path, const std::vector<MetricsRow>& rows) {
  std::string text;
  for (const auto& r : rows) {
    check_field(r.collection, path, "collection");
    check_field(r.split, path, "split");
    text += csv_line(r);
  }
  struct stat st {};
  const bool fresh = ::stat(path.c_str(), &st) != 0 || st.st_size == 0;
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
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_no == 1) {
      if (line != kMetricsHeader)
        throw Error("line 1: header is '" + line + "', expected '" + kMetricsHeader + "'", path);
      continue;
    }
    if (line.empty()) continue;
    try {
      rows.push_back(parse_row(line));
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

double cv_score(const std::vector<MetricsRow>& rows, const std::string& collection) {
  std::map<int, double> best;  // fold -> best oof score
  for (const auto& r : rows) {
    if (r.collection != collection || r.split != "oof" || std::isnan(r.score) || r.fold < 0)
      continue;
    auto it = best.find(r.fold);
    if (it == best.end() || r.score > it->second) best[r.fold] = r.score;
  }
  std::vector<double> scores;
  for (const auto& [fold, score] : best) scores.push_back(score);
  return mean_finite(scores);
}

std::string curves_file_name(const std::string& collection) {
  std::string s = collection;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return "curves_" + s + ".svg";
}

std::string learning_curves_svg(const std::vector<MetricsRow>& rows,
                                const std::string& collection) {
  const double width = 960;
  const Panel loss{90, 60, 360, 240, "training loss (mean per epoch)", "loss"};
  const Panel score{570, 60, 360, 240, "score: oof solid, valid dashed (open marks)",
                    "score (1 = best)"};
  std::vector<Series> score_series = collect(rows, collection, "oof", false, false);
  for (auto& s : collect(rows, collection, "valid", false, true)) score_series.push_back(s);
  const std::vector<Series> loss_series = collect(rows, collection, "train", true, false);
  std::set<int> folds;
  for (const auto& s : loss_series) folds.insert(s.fold);
  for (const auto& s : score_series) folds.insert(s.fold);

  std::ostringstream body;
  draw_panel(body, loss, loss_series);
  draw_panel(body, score, score_series);
  const double bottom = draw_legend(body, folds, loss.y + loss.h + 62, width);

  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
      << bottom + 10 << "\" viewBox=\"0 0 " << width << " " << bottom + 10
      << "\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      << "<text x=\"" << width / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">"
      << "Learning curves: " << xml_escape(collection) << "</text>\n"
      << body.str() << "</svg>\n";
  return svg.str();
}

std::string report_markdown(const ReportInput& in) {
  std::ostringstream md;
  md << "# " << in.title << "\n\n";
  if (!in.ensemble.empty()) md << "- ensemble: " << in.ensemble << "\n";
  if (in.folds > 0) md << "- folds: " << in.folds << "\n";
  for (const auto& n : in.notes) md << "- " << n << "\n";
  md << "\nScores: tile = top-5 slowdown score, layout = Kendall tau; 1 is perfect for both. "
        "CV = mean over folds of the out-of-fold score of each fold's kept (best oof) epoch. Overall = "
        "mean of the collection scores. n/a = not measured or not defined (default-first is "
        "defined for tile only).\n\n## Summary\n\n";
  const std::vector<std::string> ids = report_collections(in);
  summary_table(md, in, ids);
  for (const auto& id : ids) {
    md << "## " << id << "\n\n";
    if (has_rows(in.metrics, id))
      md << "![Learning curves of " << id << "](" << curves_file_name(id) << ")\n\n";
    fold_table(md, in, find_report(in, id));
  }
  return md.str();
}

std::string write_report(const std::string& out_dir, const ReportInput& input) {
  make_dirs(out_dir);
  for (const auto& id : report_collections(input))
    if (has_rows(input.metrics, id))
      write_file_atomic(out_dir + "/" + curves_file_name(id),
                        learning_curves_svg(input.metrics, id));
  const std::string path = out_dir + "/report.md";
  write_file_atomic(path, report_markdown(input));
  return path;
}

}  // namespace tpuperf
