// Training of one fold model inside its fold group: the epoch loop, optimizer steps,
// per-epoch metrics and checkpoints.
#pragma once

#include <mpi.h>

#include <string>

#include "trainer/train/dataset.h"
#include "trainer/train/settings.h"

namespace tpuperf {

struct FoldData {
  const GraphSet* train = nullptr;
  const GraphSet* oof = nullptr;    // held-out train fold; may be empty
  const GraphSet* valid = nullptr;  // the valid split; may be empty
};

// Trains (or, with resume, continues) one fold model; every rank of `group` calls it.
// Writes metrics rows and best/last checkpoints (group rank 0). Returns the path of the
// best checkpoint.
std::string train_fold(const TrainSettings& s, const std::string& collection, int fold,
                       const FoldData& data, MPI_Comm group, bool resume);

}  // namespace tpuperf
