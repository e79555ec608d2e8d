# The train and model sections of the integration and faults tests' configs (sourced):
# small models and steps, so that a tiny generated tree trains in seconds.
#   tiny_train_yaml EPOCHS HIDDEN LAYERS THREADS   (THREADS: train.threads_per_rank, 0 = auto)
tiny_train_yaml() {
  cat <<YAML
train:
  epochs: $1
  threads_per_rank: $4
  graphs_per_step: 4
  tile_slate: 16
  layout_slate: 8
model:
  tile: {hidden: $2, layers: $3}
  layout: {hidden: $2, layers: $3}
YAML
}
