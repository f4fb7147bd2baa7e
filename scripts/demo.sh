#!/usr/bin/env bash
# The README's demo command: install, then run the end-to-end demo on local Spark.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
rsp-sidecar demo "$@"
