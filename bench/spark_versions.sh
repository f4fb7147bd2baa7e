#!/usr/bin/env bash
# The project's benchmarks on two PySpark versions, back to back in one sitting (issue 60):
#
#   bash bench/spark_versions.sh OLD_PYTHON NEW_PYTHON [OUT_DIR]
#
# OLD_PYTHON / NEW_PYTHON: interpreters with the project installed on the two PySpark versions,
# e.g. a virtual environment made as docs/development.md ("Spark versions") shows, and the
# default install. Each benchmark runs on OLD then NEW before the next starts, so both columns
# share the machine's state; the outputs go to OUT_DIR (default: a temporary directory), one
# file per benchmark and version, and their last lines are printed. Sizes are kept to minutes a
# benchmark; docs/benchmarks.md ("Spark versions") has the table made from one run.
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 out=${3:-$(mktemp -d -t rsp-spark-versions-XXXX)}
mkdir -p "$out"
benches=(
  "state_floor|bench/state_floor.py --batches 12 --repeat 1"
  "keyed|bench/keyed.py --vehicles 3000 --events 100000 --batches 5 --per-minute 667 --scales 1 --no-floor"
  "streaming|bench/streaming.py --minutes 100 --per-minute 1000 --baseline-instants 5"
  "query_at|bench/query_at.py --parts example --repeat 1"
  "materialize|bench/materialize.py --only small plants incremental --incremental 1000000"
)
for entry in "${benches[@]}"; do
  name=${entry%%|*} command=${entry#*|}
  for python in "$old" "$new"; do
    version=$("$python" -c "import importlib.metadata as m; print(m.version('pyspark'))")
    log="$out/$name-$version.txt"
    echo "== $name on PySpark $version: $python $command"
    start=$(date +%s)
    # shellcheck disable=SC2086  # the command's words are meant to split
    "$python" $command > "$log" 2>&1 || echo "   (exit code $?: see $log)"
    echo "   $(( $(date +%s) - start )) s, $log"
    tail -n 25 "$log" | sed 's/^/   | /'
  done
done
echo "outputs in $out"
