# Sourced by the benches that share the bench tree (tpuperf-synth --scale bench --seed 0).
#
# ensure_bench_tree BIN DIR [WRAPPER...]: generates the bench tree into DIR with BIN's
# tpuperf-synth (run under WRAPPER, e.g. nice -n 19) unless DIR/.complete says a whole one
# is there. It is written under a temporary name and renamed into place, so an interrupted
# generation leaves no half tree, and a tree another bench finished meanwhile is kept.
ensure_bench_tree() {
  local bin=$1 dir=$2
  shift 2
  [ -f "$dir/.complete" ] && return 0
  echo "== generating the bench tree into $dir"
  local tmp=$dir.tmp.$$
  rm -rf "$tmp"
  "$@" "$bin/tpuperf-synth" --out "$tmp" --scale bench --seed 0 --log-level warn
  touch "$tmp/.complete"
  if [ -f "$dir/.complete" ]; then rm -rf "$tmp"; else rm -rf "$dir"; mv -T "$tmp" "$dir"; fi
}
