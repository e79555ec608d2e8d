#include "trainer/eval/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "common/base/files.h"
#include "common/base/progress.h"
#include "trainer/eval/charts.h"

namespace tpuperf {

namespace {

std::string throughput(double v) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.1f", v);
  return buf;
}

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
  for (size_t i = 0; i < v.size(); ++i) out += (i ? " / " : "") + format_value(v[i]);
  return out.empty() ? "n/a" : out;
}

void summary_table(std::ostringstream& md, const ReportInput& in,
                   const std::vector<std::string>& ids) {
  bool any_test = false;
  for (const auto& c : in.collections) any_test = any_test || !std::isnan(c.test_score);
  md << "| collection | CV (oof) | CV top-1 | valid: ensemble | valid top-1 | valid: fold models | valid: random | "
        "valid: default-first | valid graphs |"
     << (any_test ? " test |" : "") << " train time | configs/s |\n"
     << "|---|---:|---:|---:|---:|---:|---:|---:|---:|" << (any_test ? "---:|" : "") << "---:|---:|\n";
  std::vector<double> cv, ens, rnd, dflt, test, cv1, ens1;
  int64_t graphs = 0;
  double seconds = 0;
  bool all_default = true;
  for (const auto& id : ids) {
    const CollectionReport c = find_report(in, id);
    md << "| " << id << " | " << format_value(c.cv_score) << " | " << format_value(c.kept_oof_slowdown[0], 3) << " | "
       << format_value(c.valid_ensemble) << " | " << format_value(c.valid_slowdown[0], 3) << " | "
       << join_scores(c.valid_per_fold) << " | " << format_value(c.valid_random) << " | "
       << format_value(c.valid_default_first) << " | " << c.valid_graphs << " |"
       << (any_test ? " " + format_value(c.test_score) + " |" : "") << " " << format_duration(c.train_seconds, 1)
       << " | " << throughput(c.configs_per_s) << " |\n";
    cv.push_back(c.cv_score), ens.push_back(c.valid_ensemble), rnd.push_back(c.valid_random);
    cv1.push_back(c.kept_oof_slowdown[0]), ens1.push_back(c.valid_slowdown[0]);
    dflt.push_back(c.valid_default_first), test.push_back(c.test_score);
    all_default = all_default && !std::isnan(c.valid_default_first);
    graphs += c.valid_graphs;
    if (!std::isnan(c.train_seconds)) seconds += c.train_seconds;
  }
  md << "| **overall** | " << format_value(mean_finite(cv)) << " | " << format_value(mean_finite(cv1), 3) << " | "
     << format_value(mean_finite(ens)) << " | " << format_value(mean_finite(ens1), 3) << " | | "
     << format_value(mean_finite(rnd)) << " | "
     << (all_default ? format_value(mean_finite(dflt)) : "n/a") << " | " << graphs << " |"
     << (any_test ? " " + format_value(mean_finite(test)) + " |" : "") << " " << format_duration(seconds, 1)
     << " | |\n\n";
}

// Per fold: epochs trained, the last train loss, the kept epoch (best oof) with its oof
// score, and the kept model's valid score.
void fold_table(std::ostringstream& md, const ReportInput& in, const CollectionReport& c) {
  struct Last {
    int epochs = 0;
    int loss_epoch = -1, oof_epoch = -1, valid_epoch = -1;  // oof_epoch: the best oof's
    std::vector<double> loss;
    double oof = CollectionReport::kNone, valid = CollectionReport::kNone;
    double oof_top1 = CollectionReport::kNone;
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
      l.oof_epoch = r.epoch, l.oof = r.score, l.oof_top1 = r.slowdown[0];
    } else if (r.split == "valid" && !std::isnan(r.score) && r.epoch >= l.valid_epoch) {
      l.valid_epoch = r.epoch, l.valid = r.score;
    }
  }
  if (folds.empty()) {
    md << "No metrics rows for this collection.\n\n";
    return;
  }
  md << "| fold | epochs | final train loss | kept epoch (best oof) | its oof score | its oof top-1 | "
        "valid score (kept model) |\n"
     << "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& [fold, l] : folds) {
    double valid = l.valid;
    if (fold >= 0 && static_cast<size_t>(fold) < c.valid_per_fold.size() &&
        !std::isnan(c.valid_per_fold[static_cast<size_t>(fold)]))
      valid = c.valid_per_fold[static_cast<size_t>(fold)];
    md << "| " << fold_label(fold) << " | " << l.epochs << " | " << format_value(mean_finite(l.loss))
       << " | " << (l.oof_epoch < 0 ? "n/a" : std::to_string(l.oof_epoch)) << " | " << format_value(l.oof)
       << " | " << format_value(l.oof_top1, 3) << " | " << format_value(valid) << " |\n";
  }
  md << "\n";
}

std::string join3(const CollectionReport::Slowdowns& v) {
  return format_value(v[0], 3) + " / " + format_value(v[1], 3) + " / " + format_value(v[2], 3);
}

// What an autotuner that measures the k best predicted configs gets, beside a random order.
void slowdown_table(std::ostringstream& md, const ReportInput& in, const std::vector<std::string>& ids) {
  md << "Top-1 / top-5 / top-10 slowdown (the best runtime among the k best predicted configs over the "
        "best of all; 1 is best), of the model's own order. Tile predictions that keep config 0 among the "
        "top 5 (output.tile_keep_default) put it in the 5th place: the top-1 is the model's own first pick "
        "(the submission's may be config 0 instead: see First pick below), and *own top-5* is the top-5 "
        "slowdown of the model's own 5 best, config 0 not put in:\n\n"
     << "| collection | CV (oof, kept epochs) | CV: own top-5 | valid: ensemble | valid: own top-5 | valid: random |\n"
     << "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& id : ids) {
    const CollectionReport c = find_report(in, id);
    md << "| " << id << " | " << join3(c.kept_oof_slowdown) << " | " << format_value(c.kept_oof_own5, 3) << " | "
       << join3(c.valid_slowdown) << " | " << format_value(c.valid_own5, 3) << " | "
       << join3(c.valid_random_slowdown) << " |\n";
  }
  md << "\n";
}

// What the run's rankings of tile graphs put first (output.tile_first_pick), and why.
void first_pick_lines(std::ostringstream& md, const ReportInput& in) {
  bool any = false;
  for (const auto& c : in.collections) {
    if (c.first_pick.empty()) continue;
    if (!any) md << "First pick (what an autotuner that measures one config runs; the submission and tpuperf-rank "
                    "use it):\n\n";
    any = true;
    md << "- " << c.first_pick << "\n";
  }
  if (any) md << "\n";
}

bool has_rows(const std::vector<MetricsRow>& rows, const std::string& collection) {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const MetricsRow& r) { return r.collection == collection; });
}

}  // namespace

std::string report_markdown(const ReportInput& in) {
  std::ostringstream md;
  md << "# " << in.title << "\n\n";
  if (!in.ensemble.empty()) md << "- ensemble: " << in.ensemble << "\n";
  if (in.folds > 0) md << "- folds: " << in.folds << "\n";
  for (const auto& n : in.notes) md << "- " << n << "\n";
  md << "\nScores: tile = top-5 slowdown score, layout = Kendall tau; 1 is perfect for both. "
        "CV = mean over folds of the out-of-fold score of each fold's kept (best oof) epoch; top-1 = the "
        "top-1 slowdown (the model's first pick's runtime over the best's, 1 is best) of the same predictions. Overall = "
        "mean of the collection scores. n/a = not measured or not defined (default-first is "
        "defined for tile only).\n\n## Summary\n\n";
  const std::vector<std::string> ids = report_collections(in);
  summary_table(md, in, ids);
  slowdown_table(md, in, ids);
  first_pick_lines(md, in);
  for (const auto& id : ids) {
    md << "## " << id << "\n\n";
    if (has_rows(in.metrics, id))
      md << "![Learning curves of " << id << "](" << curves_file_name(id) << ")\n\n";
    fold_table(md, in, find_report(in, id));
  }
  return md.str();
}

std::array<double, 3> kept_oof_slowdowns(const std::vector<MetricsRow>& rows, const std::string& collection) {
  const auto kept = kept_oof_rows(rows, collection);
  std::array<double, 3> out{};
  for (size_t k = 0; k < out.size(); ++k) {
    std::vector<double> v;
    for (const auto& [fold, r] : kept) v.push_back(r->slowdown[k]);
    out[k] = mean_finite(v);
  }
  return out;
}

double kept_oof_own_slowdown_5(const std::vector<MetricsRow>& rows, const std::string& collection) {
  std::vector<double> v;
  for (const auto& [fold, r] : kept_oof_rows(rows, collection)) v.push_back(r->slowdown_5_own);
  return mean_finite(v);
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
