# Sourced at the start of every slurm/*.sbatch job: the repository's launcher functions
# (jobs/lib.sh), the binaries ($TPUPERF_BIN, passed by submit.sh) and the MPI launcher
# for run_stage. (Sourced, not run.)

source "$TPUPERF_REPO/jobs/lib.sh"

# Slurm 22.05: srun no longer inherits --cpus-per-task from the job; without this every
# rank's threads would share one CPU.
export SRUN_CPUS_PER_TASK=${SLURM_CPUS_PER_TASK:-1}
export OMP_NUM_THREADS=$SRUN_CPUS_PER_TASK

case "${TPUPERF_MPI:-pmix}" in
  mpirun) LAUNCH=(mpirun_local "$SLURM_NTASKS") ;;
  *) LAUNCH=(srun --mpi="${TPUPERF_MPI:-pmix}" --kill-on-bad-exit=1) ;;
esac

echo "== $SLURM_JOB_NAME: job $SLURM_JOB_ID on $SLURM_JOB_NODELIST, $SLURM_NTASKS tasks x" \
  "$SRUN_CPUS_PER_TASK cpus, started $(date -u +%FT%TZ); launcher: ${LAUNCH[*]}; binaries: $TPUPERF_BIN"
