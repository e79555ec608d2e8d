#!/usr/bin/env bash
# The full stress tree end to end: tests/pipeline/synth/test_stress.sh (ctest runs it on the
# stress-small scale) with STRESS_SCALE=stress, timed per step; writes the "Stress tree"
# section of tests/bench/RESULTS.md. Not a test run by ctest (too long for CI).
#
# Usage: bench_stress.sh [BIN_DIR]     (default: <repo>/build/bin)
# Environment: RESULTS (default <repo>/tests/bench/RESULTS.md).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
BIN=$(cd "${1:-$SRC/build/bin}" && pwd)
RESULTS=${RESULTS:-$SRC/tests/bench/RESULTS.md}
log=$(mktemp)
l0=$(cut -d' ' -f1 /proc/loadavg); t0=$(date +%s)
status=passed
STRESS_SCALE=stress bash "$SRC/tests/pipeline/synth/test_stress.sh" "$BIN" "$SRC" 2>&1 | tee "$log" || status=FAILED
wall=$(( $(date +%s) - t0 )); l1=$(cut -d' ' -f1 /proc/loadavg)
python3 - "$log" "$RESULTS" "$HERE" "$status" "$wall" "$l0" "$l1" "$(date -u '+%Y-%m-%d %H:%M UTC')" <<'PY'
import re, sys
log, results, here, status, wall, l0, l1, when = sys.argv[1:]
sys.path.insert(0, here)
from results_md import machine, replace_section
text = open(log).read()
steps = re.findall(r"^== (.*) \((\d\d:\d\d:\d\d)\)$", text, re.M)
def secs(t):
    h, m, s = map(int, t.split(":"))
    return h * 3600 + m * 60 + s
rows, used = [], 0
for i, (name, t) in enumerate(steps):
    # The last step runs to the end of the script.
    took = secs(steps[i + 1][1]) - secs(t) if i + 1 < len(steps) else int(wall) - used
    used += took
    rows.append(f"| {name} | {took} |")
done = [re.sub(r"^.*\] done:", "done:", l) for l in text.splitlines() if "] done:" in l][:1]
lines = ["## Stress tree", "",
         f"Run {when} by `tests/bench/bench_stress.sh` (this section is written by the script).", "",
         f"Machine: {machine()}; load {l0} → {l1} (other jobs may share it).", "",
         f"`STRESS_SCALE=stress tests/pipeline/synth/test_stress.sh`: the full stress scale "
         f"(`tpuperf-synth --scale stress`) through the same checks ctest runs on stress-small: "
         f"every promised shape present, preprocessing on 2 ranks rejecting exactly the program "
         f"without configurable nodes, inspect validating every file, 5 folds trained on 2 ranks, "
         f"a submission scored. Result: **{status}** in {wall} s.", ""]
lines += [f"Generator: `{done[0].strip()}`", ""] if done else []
lines += ["| step | seconds |", "|---|---|"] + rows + [""]
replace_section(results, "Stress tree", "\n".join(lines))
print("\n".join(lines))
PY
rm -f "$log"
[ "$status" = passed ]
