"""The lifetimes operators on the driver: over Python rows (``rows``, the definition) and over
numpy columns (``columnar``, the continuous runtime's fast path), both walked by ``walk``."""
