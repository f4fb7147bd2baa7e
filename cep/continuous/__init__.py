"""Continuous evaluation on Spark Structured Streaming: what a continuous answer is and what to
keep (``plan``), the micro-batch runner with its sources, state and sinks (``runner``), and the
per-instant languages' runner (``instants``)."""
