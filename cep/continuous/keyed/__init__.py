"""The keyed continuous operator: a CQELS-CEP query as one Spark stateful operator (``keys``: the
partitioning; ``bucket``: a bucket's state and step, numpy; ``operator``: the Spark operator)."""
