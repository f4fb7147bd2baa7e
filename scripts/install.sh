#!/usr/bin/env bash
# Install the project (editable, with test extras) and fetch its JVM jars into the cache.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
# GraphFrames' jar comes from Maven Central; when it cannot be had, setup says so and the
# default (DataFrame) strategy is used.
rsp-sidecar setup || true
