// The learning-curve chart of one collection (curves_<collection>.svg beside report.md):
// plain SVG drawn from metrics.csv rows, no plotting library.
#pragma once

#include <string>
#include <vector>

#include "trainer/eval/metrics_log.h"

namespace tpuperf {

// "curves_tile_xla.svg" for "tile:xla".
std::string curves_file_name(const std::string& collection);
// Two panels: training loss (mean per epoch) and oof (solid) / valid (dashed) score per
// epoch, one colour per fold, with axes, ticks, labels and a legend.
std::string learning_curves_svg(const std::vector<MetricsRow>& rows,
                                const std::string& collection);
// How charts and tables name a fold: "fold 2", or "ensemble" for fold -1.
std::string fold_label(int fold);

}  // namespace tpuperf
