#include "trainer/eval/charts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

namespace tpuperf {

namespace {

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
        << "\" text-anchor=\"middle\" font-size=\"11\">" << format_value(t, ax.decimals) << "</text>\n";
  }
  for (double t : ay.ticks()) {
    svg << "<line x1=\"" << p.x - 4 << "\" y1=\"" << py(t) << "\" x2=\"" << p.x + p.w
        << "\" y2=\"" << py(t) << "\" stroke=\"#dddddd\"/>\n";
    svg << "<text x=\"" << p.x - 7 << "\" y=\"" << py(t) + 4
        << "\" text-anchor=\"end\" font-size=\"11\">" << format_value(t, ay.decimals) << "</text>\n";
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
    items.emplace_back(fold_label(f), std::string("stroke=\"") + fold_color(f) + "\"");
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

}  // namespace

std::string fold_label(int fold) { return fold < 0 ? "ensemble" : "fold " + std::to_string(fold); }

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

}  // namespace tpuperf
