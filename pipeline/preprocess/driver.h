// tpuperf-preprocess as a library call: plan, process this rank's share of the source
// files, merge statistics and folds across ranks, then rank 0 writes the manifest.
#pragma once

#include "common/config/config.h"
#include "common/mpi/mpi_env.h"

namespace tpuperf {

// Collective over ctx.world. Returns kExitOk, or kExitRejected when some source file was
// rejected (listed in processed_dir/rejected.txt and the manifest). Fatal errors throw.
int run_preprocess(const Config& cfg, const MpiContext& ctx, bool force);

}  // namespace tpuperf
