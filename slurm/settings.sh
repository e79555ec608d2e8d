# What the Slurm jobs of slurm/submit.sh request. Every value can be changed without editing
# this file: export the variable before submitting, e.g.
#   TPUPERF_PARTITION=gpu TPUPERF_TRAIN_CPUS=16 slurm/submit.sh configs/tpugraphs.yaml
# (sourced by slurm/submit.sh, not run)

# For every job: partition and account (empty: the cluster's defaults), and any further
# sbatch options, split on spaces (e.g. "--qos=long --mem-per-cpu=4G --constraint=avx512").
: "${TPUPERF_PARTITION:=}"
: "${TPUPERF_ACCOUNT:=}"
: "${TPUPERF_SBATCH_ARGS:=}"
# How the MPI ranks are started inside a job: an srun MPI plugin (pmix works with Debian's
# Open MPI 4.1 and Slurm 22.05; pmi2 does not, as that Open MPI lacks PMI-2 support), or
# "mpirun" (Open MPI's mpirun inside the allocation, which starts its daemons with srun).
: "${TPUPERF_MPI:=pmix}"
# Where each submission gets its own log directory (relative paths: to the directory
# submit.sh is run from).
: "${TPUPERF_LOG_DIR:=slurm-logs}"

# Preprocessing: one MPI job over all collections; ranks share the files by size.
: "${TPUPERF_PREPROCESS_TASKS:=4}"
: "${TPUPERF_PREPROCESS_CPUS:=1}"
: "${TPUPERF_PREPROCESS_TIME:=02:00:00}"

# Training: ntasks = folds x ranks per fold (every fold trains at the same time, each on
# TPUPERF_TRAIN_RANKS_PER_FOLD data-parallel ranks); cpus-per-task = LibTorch threads per
# rank. The folds are read from the config (preprocess.folds, or a --set of it); set
# TPUPERF_FOLDS to give them when the config cannot be read on the submitting machine.
: "${TPUPERF_TRAIN_RANKS_PER_FOLD:=1}"
: "${TPUPERF_TRAIN_CPUS:=8}"
: "${TPUPERF_TRAIN_TIME:=24:00:00}"
: "${TPUPERF_FOLDS:=}"

# Prediction and ensemble from the best checkpoints (tpuperf-train --predict-only).
: "${TPUPERF_PREDICT_TASKS:=1}"
: "${TPUPERF_PREDICT_CPUS:=8}"
: "${TPUPERF_PREDICT_TIME:=02:00:00}"
