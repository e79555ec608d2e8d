# Shared by the workstation scripts (sourced, not run).

# mpirun with sensible defaults for one machine: no binding (Open MPI would pin each of 2
# ranks to one core, and all of a rank's threads with it), oversubscription allowed, and
# the root flags only when running as root.
#   mpirun_local NP COMMAND...
mpirun_local() {
  local np=$1; shift
  local flags=(--bind-to none --oversubscribe -np "$np")
  if [ "$(id -u)" -eq 0 ]; then flags+=(--allow-run-as-root); fi
  mpirun "${flags[@]}" "$@"
}

# Threads per rank so that ranks x threads does not exceed the cores.
threads_per_rank() {
  local np=$1 cores
  cores=$(nproc)
  echo $(( cores / np > 0 ? cores / np : 1 ))
}
