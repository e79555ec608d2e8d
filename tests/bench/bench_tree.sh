# Sourced by the benches that share the bench tree (tpuperf-synth --scale bench --seed 0
# --noise-free: the release-format tree, its test truth, and every file's noise-free
# runtimes under DIR/noise_free/, which the baselines bench scores models against).
#
# ensure_bench_tree BIN DIR [WRAPPER...]: generates the bench tree into DIR with BIN's
# tpuperf-synth (run under WRAPPER, e.g. nice -n 19) unless DIR/.complete says a whole one
# is there (a tree from before --noise-free, without DIR/noise_free, is generated again: the
# same seed writes the same npz files). It is written under a temporary name and renamed
# into place, so an interrupted generation leaves no half tree, and a tree another bench
# finished meanwhile is kept.
bench_tree_complete() { [ -f "$1/.complete" ] && [ -d "$1/noise_free" ]; }

ensure_bench_tree() {
  local bin=$1 dir=$2
  shift 2
  bench_tree_complete "$dir" && return 0
  echo "== generating the bench tree into $dir"
  local tmp=$dir.tmp.$$
  rm -rf "$tmp"
  "$@" "$bin/tpuperf-synth" --out "$tmp" --scale bench --seed 0 --noise-free --log-level warn
  touch "$tmp/.complete"
  if bench_tree_complete "$dir"; then rm -rf "$tmp"; else rm -rf "$dir"; mv -T "$tmp" "$dir"; fi
}
