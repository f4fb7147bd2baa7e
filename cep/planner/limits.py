"""The driver's budgets: how much a continuous micro-batch may hold to be evaluated on the driver
(``cep.engines.driver.columnar``) rather than on Spark. The runner (``cep.continuous.runner``)
applies them per batch; ``query --explain`` states them. Pure constants: reading them loads no
engine."""

__all__ = ["LOCAL_MAX_ROWS", "LOCAL_MAX_BATCH", "LOCAL_MAX_BACKGROUND"]

#: ``engine="auto"`` evaluates a batch on the driver while the state holds at most LOCAL_MAX_ROWS
#: triples (a pyarrow table and numpy columns: ~100 bytes a triple, plus the pairs a SEQ forms),
#: the batch at most LOCAL_MAX_BATCH lines (parsed into Python objects) and the static side's
#: background patterns at most LOCAL_MAX_BACKGROUND rows each; larger ones go to Spark
LOCAL_MAX_ROWS = 2_000_000

LOCAL_MAX_BATCH = 500_000

LOCAL_MAX_BACKGROUND = 500_000
