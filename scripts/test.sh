#!/usr/bin/env bash
# The README's test command: install, then run the whole suite (one shared Spark session).
# pytest prints the 25 slowest tests (pyproject's addopts); the suite's wall time comes last.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
start=$(date +%s)
status=0
python3 -m pytest -q -p no:cacheprovider "$@" || status=$?
elapsed=$(( $(date +%s) - start ))
printf 'suite wall time: %d s (%d min %02d s), pytest exit code %d\n' "$elapsed" $((elapsed / 60)) $((elapsed % 60)) "$status"
exit "$status"
