// metrics.csv rows shared by the evaluation tests (metrics log, charts, report).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "trainer/eval/metrics_log.h"

namespace tpuperf {

inline MetricsRow row(const std::string& coll, int fold, int epoch, int64_t step,
                      const std::string& split, double loss, double score) {
  MetricsRow r;
  r.collection = coll;
  r.fold = fold;
  r.epoch = epoch;
  r.step = step;
  r.split = split;
  r.loss = loss;
  r.score = score;
  return r;
}

// Two folds, two epochs of tile:xla: train losses, oof and valid scores.
inline std::vector<MetricsRow> tile_metrics() {
  const double N = MetricsRow::kNone;
  std::vector<MetricsRow> rows;
  for (int fold = 0; fold < 2; ++fold) {
    for (int epoch = 1; epoch <= 2; ++epoch) {
      rows.push_back(row("tile:xla", fold, epoch, epoch * 10 - 5, "train", 2.0 / epoch + fold, N));
      rows.push_back(row("tile:xla", fold, epoch, epoch * 10, "train", 1.0 / epoch + fold, N));
      rows.push_back(row("tile:xla", fold, epoch, epoch * 10, "oof", N, 0.5 + 0.1 * epoch + 0.2 * fold));
      rows.push_back(row("tile:xla", fold, epoch, epoch * 10, "valid", N, 0.6 + 0.1 * epoch));
    }
  }
  return rows;
}

// True when python's XML parser reads the file as an SVG document.
inline bool svg_parses(const std::string& path) {
  const std::string cmd =
      "/usr/bin/python3 -c \"import sys, xml.dom.minidom; "
      "d = xml.dom.minidom.parse(sys.argv[1]); sys.exit(d.documentElement.tagName != 'svg')\" '" +
      path + "'";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace tpuperf
