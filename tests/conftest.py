"""Shared fixtures: one local Spark session for the whole test run."""
from __future__ import annotations

import pytest

from ontologies.data import data_dir


@pytest.fixture(scope="session")
def spark():
    from jobs.spark import build_session

    session = build_session("rsp-sidecar tests", {
        "spark.master": "local[2]",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
        "spark.sql.adaptive.enabled": "false",
        # tiny inputs: compiling whole-stage Java for every new plan costs more than it saves
        "spark.sql.codegen.wholeStage": "false",
    })
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def shared_data():
    """The shared data directory (../shared/data or $RSP_DATA_DIR); skips when absent."""
    try:
        return data_dir()
    except FileNotFoundError as exc:
        pytest.skip(f"real data not available: {exc}")
