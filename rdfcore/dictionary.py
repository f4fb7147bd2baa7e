"""Dictionary encoding: every term becomes the 64-bit id ``xxhash64(term)`` (see ``hashing``).

Because the id is a function of the term, encoding a table is a projection and decoding a join
with the dictionary table ``(id, term)``. Building the dictionary checks that no two distinct
terms share an id; a collision is reported with the terms involved (it would silently merge
them otherwise).
"""
from __future__ import annotations

from collections.abc import Sequence

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rdfcore.errors import HashCollisionError
from rdfcore.hashing import term_id
from rdfcore.schema import ID, ID_COLUMNS, O, P, S, TERM, require_columns
from rdfcore.vocab import ENTAILMENT_VOCABULARY, RDF_TYPE


def encode_column(column: str) -> F.Column:
    """The id of the term held in string column ``column``."""
    return F.xxhash64(F.col(column))


def dictionary_terms(triples: DataFrame) -> DataFrame:
    """``(id, term)`` for every term occurrence of string triples (plus the entailment
    vocabulary), duplicates included: the input of :func:`checked_dictionary`."""
    require_columns(triples, (S, P, O), "dictionary_terms")
    occurrences = F.explode(F.array(F.col(S), F.col(P), F.col(O))).alias(TERM)
    vocabulary = triples.sparkSession.createDataFrame([(v,) for v in ENTAILMENT_VOCABULARY], f"{TERM} string")
    return triples.select(occurrences).unionAll(vocabulary).select(encode_column(TERM).alias(ID), TERM)


def build_dictionary(triples: DataFrame, check: bool = True) -> DataFrame:
    """Distinct ``(id, term)`` of all terms of string triples; raises on hash collisions
    (``check``). The checked dictionary stays cached on disk; use :func:`checked_dictionary` on
    :func:`dictionary_terms` to release it when done."""
    terms = dictionary_terms(triples)
    if not check:
        return terms.groupBy(ID).agg(F.min(TERM).alias(TERM))
    return checked_dictionary([terms])[0]


def checked_dictionary(parts: Sequence[DataFrame]) -> tuple[DataFrame, DataFrame]:
    """One ``(id, term)`` row per id from the union of ``parts`` (each ``(id, term)``, duplicates
    allowed); raises :class:`HashCollisionError` when two distinct terms share an id.

    The distinct ``(id, term)`` pairs (:func:`merge_dictionaries`) are the dictionary when no id
    has two of them; the check shuffles ids only. Returns the dictionary and the persisted frame
    behind it (``unpersist()`` it when done).
    """
    # On disk only: a dictionary of millions of strings must not hold the executors' memory,
    # which the joins and aggregations of the closure need (a 1 GB driver runs out otherwise).
    pairs = merge_dictionaries(parts).persist(StorageLevel.DISK_ONLY)
    check_collisions(pairs)
    return pairs, pairs


def merge_dictionaries(parts: Sequence[DataFrame]) -> DataFrame:
    """One ``(id, term)`` row per id from the union of the dictionaries ``parts`` (at least one;
    each has ``id`` and ``term`` columns, others are dropped; duplicates allowed): a store's
    dictionary, the terms of a query or of a batch, the terms an evaluation computed.

    The id is the hash of the term, so the distinct ``(id, term)`` pairs are one per id (unless
    two terms collide, which :func:`check_collisions` reports). ``distinct()`` is a hash
    aggregation; ``dropDuplicates([id])`` would be a sort-based one (its ``first(term)`` keeps a
    string buffer, which Spark's hash aggregation does not), as would a ``min``/``max`` per id."""
    union = parts[0].select(ID, TERM)
    for part in parts[1:]:
        union = union.unionAll(part.select(ID, TERM))
    return union.distinct()


def bulk_dictionary(triples: DataFrame, partitions: int) -> DataFrame:
    """:func:`dictionary_terms` made distinct for bulk data (millions of terms), without the
    pre-shuffle partial aggregation where it cannot reduce anything.

    Spark's two-phase aggregation first deduplicates each input split in a hash map. For the
    subjects of instance data (each a new term) that map only grows: at 5M triples it spilled
    ~0.5 GB on each side of the shuffle in a 1 GB driver. So the terms are split: predicates and
    the classes of ``rdf:type`` triples (few distinct terms, repeated millions of times) are
    deduplicated before the shuffle as usual; subjects and the other objects are shuffled as
    they are, into ``partitions`` partitions by id, and deduplicated after it (the partial
    aggregation then runs after the exchange, on maps ``partitions`` times smaller)."""
    require_columns(triples, (S, P, O), "bulk_dictionary")
    staged = set(ID_COLUMNS) <= set(triples.columns)

    def pairs(term: str) -> DataFrame:
        ident = F.col(ID_COLUMNS[(S, P, O).index(term)]) if staged else encode_column(term)
        return ident.alias(ID), F.col(term).alias(TERM)

    is_type = (F.col(ID_COLUMNS[1]) if staged else encode_column(P)) == term_id(RDF_TYPE)
    vocabulary = triples.sparkSession.createDataFrame([(v,) for v in ENTAILMENT_VOCABULARY], f"{TERM} string")
    few = (triples.select(*pairs(P))
           .unionAll(triples.filter(is_type).select(*pairs(O)))
           .unionAll(vocabulary.select(encode_column(TERM).alias(ID), TERM))
           .distinct())
    many = triples.select(*pairs(S)).unionAll(triples.filter(~is_type).select(*pairs(O)))
    return few.unionAll(many).repartition(partitions, ID).distinct()


def check_collisions(dictionary: DataFrame, partitions: int | None = None) -> None:
    """Raise :class:`HashCollisionError` when distinct ``(id, term)`` pairs share an id.
    ``partitions``: count the ids after a shuffle into that many partitions, with no
    pre-shuffle aggregation (see :func:`bulk_dictionary`: every id is distinct but a few)."""
    ids = dictionary.select(ID) if partitions is None else dictionary.select(ID).repartition(partitions, ID)
    clashing = [row[ID] for row in ids.groupBy(ID).count().filter(F.col("count") > 1).limit(100).collect()]
    if clashing:
        terms = dictionary.filter(F.col(ID).isin(clashing)).collect()
        raise HashCollisionError(sorted((i, sorted(row[TERM] for row in terms if row[ID] == i)) for i in clashing))


def encode_triples(triples: DataFrame, partitions: int | None = None) -> DataFrame:
    """String triples to id triples (distinct). Triples read through a staging table
    (``loading.read_ntriples``) carry their ids already (``loading.ID_COLUMNS``): those are read
    instead of hashing the strings again.

    ``partitions`` (bulk data): shuffle the triples by subject into that many partitions before
    deduplicating them, with no pre-shuffle aggregation (distinct triples do not shrink there, and
    its maps spilled 1.5 GB on each side at 20M triples; see :func:`bulk_dictionary`). The result
    is then partitioned by subject, so that per-subject aggregations downstream (rdfs9's count of
    base types per instance) need no shuffle of their own."""

    require_columns(triples, (S, P, O), "encode_triples")
    if set(ID_COLUMNS) <= set(triples.columns):
        encoded = triples.select(*[F.col(i).alias(c) for c, i in zip((S, P, O), ID_COLUMNS)])
    else:
        encoded = triples.select(encode_column(S).alias(S), encode_column(P).alias(P), encode_column(O).alias(O))
    return (encoded if partitions is None else encoded.repartition(partitions, S)).distinct()


def decode(df: DataFrame, dictionary: DataFrame, columns: tuple[str, ...]) -> DataFrame:
    """Replace the id columns ``columns`` of ``df`` by their terms (column order kept)."""
    require_columns(df, columns, "decode")
    require_columns(dictionary, (ID, TERM), "decode (dictionary)")
    out = df
    for column in columns:
        lookup = dictionary.select(F.col(ID).alias(f"_id_{column}"), F.col(TERM).alias(f"_term_{column}"))
        out = out.join(lookup, out[column] == lookup[f"_id_{column}"], "left")
        out = out.drop(column, f"_id_{column}").withColumnRenamed(f"_term_{column}", column)
    return out.select(*df.columns)
