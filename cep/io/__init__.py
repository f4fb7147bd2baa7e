"""Stream formats: stream files read into Spark (``streams``), the plain lines parsed on the driver
(``lineparse``) or scanned by compiled kernels (``linescan``; timestamped N-Triples in bulk:
``tsnt`` and its scanner ``tsntscan``)."""
