#!/usr/bin/env bash
# The README's test command: install, then run the whole suite (one shared Spark session).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
python3 -m pytest -q -p no:cacheprovider "$@"
