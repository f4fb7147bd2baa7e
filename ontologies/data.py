"""Locating the shared data directory (real data sets live beside the repository, never in it)."""
from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "RSP_DATA_DIR"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def data_dir(explicit: str | None = None) -> Path:
    """The data directory: ``explicit`` if given, else ``$RSP_DATA_DIR``, else ``<repo>/../shared/data``.

    Raises ``FileNotFoundError`` naming the path tried and how to point elsewhere.
    """
    if explicit:
        path, source = Path(explicit), "the --data-dir argument"
    elif os.environ.get(DATA_DIR_ENV):
        path, source = Path(os.environ[DATA_DIR_ENV]), f"the environment variable {DATA_DIR_ENV}"
    else:
        path, source = DEFAULT_DATA_DIR, "the default location <repo>/../shared/data"
    if not path.is_dir():
        raise FileNotFoundError(
            f"data directory {str(path)!r} (from {source}) does not exist or is not a directory; "
            f"pass --data-dir DIR or set {DATA_DIR_ENV}=DIR to the folder holding plants/, vienna/, milan/"
        )
    return path
