"""The algebra on Spark: ``evaluate`` (a query at an instant, or its answers' lifetimes), the
interval operators (``intervals``, ``lifetimes``), FILTER as Spark columns (``filters``), SPARQL 1.1
graph patterns (``graphpatterns``), C-SPARQL's and RSEP-QL's windows and policies (``csparql``,
``rsepql``), and the reference's Python functions over Arrow batches where Spark SQL falls short
(``arrow``: BIND, FILTER's computed numbers)."""
