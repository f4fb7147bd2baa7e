"""What a checkpoint was created with: ``CHECKPOINT/checkpoint.json``, one record per checkpoint of
every continuous job (``query --continuous`` on each engine, ``vienna-transit``, ``milan-routing``,
``tracheobionta``), written when the checkpoint is created and checked before Spark starts
streaming on every restart.

A checkpoint's state means something only to the engine that wrote it and under the options that
shaped it. Another engine keeps its state elsewhere in the checkpoint: it would start over beside
the old state, read every input again and write every answer again. Other options would read the
old state wrongly. So a restart goes on only with what the record says; anything else is refused
(``CheckpointError``, one line naming what the checkpoint was created with, what the run asks
for, and how to go on: the checkpoint's options, or a new checkpoint).

The record (JSON):

* ``engine``: whose state the checkpoint holds. ``per-batch``: the runner of
  ``cep.continuous.runner`` (and ``cep.continuous.instants``) — ``--engine auto``, ``local`` and
  ``spark`` keep the same state, so a restart may switch among them; ``keyed``: the operator of
  ``cep.continuous.keyed``; ``milan-routing`` and ``membership`` (``tracheobionta``): the
  scenario services' own states, whose two engines each share one.
* the options that change what the state means (``query_record``): the query (as the project
  prints it, with its ``REGISTER`` name: ``--lang``, ``--policy`` and the prefixes' expansions
  are in it), ``time_unit``, ``lateness``, ``emit``, ``every`` (``--every`` or COMPUTED EVERY),
  ``horizon``, ``rules``, ``windows`` (C-SPARQL's window convention), ``streams`` (each stream
  IRI the query reads and its source: a directory, or a Kafka topic, with its format: Spark's
  offsets are the source's), ``buckets`` (the keyed engine's bucket count). ``milan-routing``
  records its ``time_unit`` and ``streams``; ``membership`` (no state but Spark's offsets) its
  ``streams``.

What a restart may change (not recorded): ``--engine`` among ``auto``/``local``/``spark``, the
trigger, ``--max-per-trigger``, ``--timeout``, the sink (``--out``: the answers go there from the
restart on), ``--rejects``, the metrics, the Kafka brokers of a topic, and the background
(``--static`` / ``--closure``: a new version is used from the next batch on and every answer names
its ``_version``).

A checkpoint created before the record is read from its layout (``recorded``):
``CHECKPOINT/state/<batch>/meta.json`` is the per-batch runner's (its meta's window convention is
the one it was written with), ``CHECKPOINT/keyed`` or ``CHECKPOINT/keyed.json`` the keyed
engine's (``keyed.json``'s bucket count, else 16, the operator's default then),
``CHECKPOINT/state/<batch>.json`` milan-routing's; the options the layout does not tell are taken
from the restart, which writes the record. A checkpoint that holds no state yet (no Spark
progress, no batch state: a run refused before it streamed) takes the record of the run that
starts it.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict

from cep.algebra.windows import WindowConvention
from cep.continuous.plan import ContinuousError, ContinuousPlan
from rdfcore import fs

__all__ = ["RECORD", "PER_BATCH", "KEYED", "MILAN", "MEMBERSHIP", "CheckpointError", "engine_family",
           "query_record", "streams_record", "recorded", "check", "claim"]

#: the record's name under the checkpoint
RECORD = "checkpoint.json"

PER_BATCH, KEYED, MILAN, MEMBERSHIP = "per-batch", "keyed", "milan-routing", "membership"

#: each engine as a message names it, and how a run asks for it
_ENGINES = {PER_BATCH: ("the per-batch engine", "--engine auto, local or spark"),
            KEYED: ("the keyed engine", "--engine keyed"),
            MILAN: ("the milan-routing service", "milan-routing"),
            MEMBERSHIP: ("the class-membership service", "tracheobionta")}

#: the option to give again, per recorded field
_OPTIONS = {"query": "the same query", "time_unit": "--time-unit", "lateness": "--lateness", "emit": "--emit",
            "every": "--every", "horizon": "--horizon", "rules": "--rules",
            "windows": "--window-bounds, --window-start, --empty-windows, --csparql-compat", "streams": "--stream",
            "buckets": "--buckets, or leave it out"}

#: what a checkpoint's layout holds (module doc): the Spark checkpoint and batch states of the
#: per-batch runner and the services, the keyed engine's query, the keyed engine's old record
_SPARK, _STATE, _KEYED_QUERY, _KEYED_RECORD = "spark", "state", "keyed", "keyed.json"
#: the bucket count of a keyed checkpoint created before ``keyed.json`` (the operator's default then)
_UNRECORDED_BUCKETS = 16


class CheckpointError(ContinuousError):
    """A restart that the checkpoint's record refuses (module doc), or a record that cannot be read."""


def engine_family(engine: str) -> str:
    """The record's ``engine`` of a run's ``--engine``: ``keyed``, else ``per-batch``."""
    return KEYED if engine == KEYED else PER_BATCH


def streams_record(sources: Sequence, streams: Sequence[str] | None = None) -> dict[str, str]:
    """{stream IRI: its source} of ``sources`` (``FileSource`` / ``KafkaSource``) whose stream is
    one of ``streams`` (None: all): a directory as an absolute path, a topic without its brokers."""
    out = {}
    for source in sources:
        if streams is not None and source.stream not in streams:
            continue
        directory = getattr(source, "directory", None)
        if directory is not None:
            where = str(directory)
            text = f"files in {where if '://' in where else os.path.abspath(where)}"
        elif getattr(source, "topic", None) is not None:
            text = f"Kafka topic {source.topic}"
        else:
            text = repr(source)
        fmt = getattr(source, "fmt", None)
        out[source.stream] = text + (f" ({fmt})" if fmt else "")
    return out


def query_record(engine: str, cplan: ContinuousPlan, sources: Sequence, buckets: int | None = None) -> dict:
    """The record of a continuous query's checkpoint (module doc): ``engine`` (``PER_BATCH`` or
    ``KEYED``), the plan's options, the sources of the streams it reads; ``buckets`` (keyed; None:
    whatever the checkpoint holds)."""
    query = cplan.written or cplan.query     # as written: a planner that rewrites it otherwise is no new query
    text = str(query)
    if query.registration is not None:
        text = f"REGISTER {query.registration[0]} {query.registration[1]} AS {text}"
    return {"engine": engine, "query": text, "time_unit": cplan.time_unit, "lateness": cplan.lateness,
            "emit": cplan.emit, "every": list(cplan.every), "horizon": cplan.lookback,
            "rules": [str(rule) for rule in cplan.rules],
            "windows": asdict(cplan.convention),
            "streams": streams_record(sources, cplan.streams), "buckets": buckets}


def _has_state(checkpoint) -> bool:
    return any((checkpoint / name).exists() for name in (_SPARK, _STATE, _KEYED_QUERY))


def recorded(checkpoint) -> dict | None:
    """What ``checkpoint`` was created with: its record; for a checkpoint created before records,
    what its layout tells (``engine`` None when it does not tell which); None for a new checkpoint
    or one that holds no state yet (module doc)."""
    path = checkpoint / RECORD
    if path.exists():
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(record, dict) or not isinstance(record.get("engine"), str):
                raise ValueError("no engine")
        except ValueError as exc:
            raise CheckpointError(f"{path}: not a checkpoint record ({exc}); expected the JSON object a continuous "
                                  f"job writes when it creates its checkpoint") from None
        return record if _has_state(checkpoint) else None
    return _inferred(checkpoint)


def _inferred(checkpoint) -> dict | None:
    """The record of a checkpoint created before records, from its layout (module doc)."""
    keyed_record = checkpoint / _KEYED_RECORD
    keyed = keyed_record.exists() or (checkpoint / _KEYED_QUERY).exists()
    state = checkpoint / _STATE
    batches = [p for p in state.iterdir() if not p.name.startswith(".")] if state.is_dir() else []
    per_batch = [p for p in batches if (p / "meta.json").exists()]
    milan = [p for p in batches if p.name.endswith(".json")]
    found = [name for name, there in ((KEYED, keyed), (PER_BATCH, per_batch), (MILAN, milan)) if there]
    if keyed and len(found) == 1 and (checkpoint / _SPARK).exists():
        found.append(PER_BATCH)         # Spark's progress of the per-batch runner, killed before its first state
    if len(found) > 1:
        raise CheckpointError(f"the checkpoint {checkpoint} holds the state of more than one engine "
                              f"({' and '.join(_ENGINES[f][0] for f in found)}): it was restarted "
                              f"with another engine before checkpoints recorded theirs, and its answers may have been "
                              f"written twice. Start a new checkpoint (another --checkpoint DIR, and another --out)")
    if keyed:
        buckets = _UNRECORDED_BUCKETS
        if keyed_record.exists():
            try:
                buckets = json.loads(keyed_record.read_text(encoding="utf-8"))["buckets"]
            except (ValueError, KeyError, TypeError) as exc:
                raise CheckpointError(f"{keyed_record}: not a keyed checkpoint record ({exc}); expected "
                                      f"{{\"buckets\": N}}") from None
        return {"engine": KEYED, "buckets": buckets}
    if per_batch:
        newest = max(per_batch, key=lambda p: p.name)
        convention = json.loads((newest / "meta.json").read_text(encoding="utf-8")).get("convention")
        return {"engine": PER_BATCH, **({"windows": convention} if convention is not None else {})}
    if milan:
        return {"engine": MILAN}
    if (checkpoint / _SPARK).exists():
        return {"engine": None}         # a Spark checkpoint and no state: any engine's
    return None


def _shown(field: str, value, checkpoint) -> str:
    """A recorded value as a message says it."""
    if field == "query":
        return f"the query in {checkpoint / RECORD}" if value is not None else "another query"
    if field == "windows":
        return str(WindowConvention(**value))
    if field == "buckets":
        return f"{value} buckets"
    if field == "rules":
        return f"{len(value)} --rules" if value else "no --rules"
    if field == "every":
        return f"--every {', '.join(map(str, value))}" if value else "no --every"
    if field == "horizon":
        return f"--horizon {value}" if value is not None else "no --horizon"
    return f"{_OPTIONS[field]} {value}" if field in _OPTIONS else f"{field} {value}"


def _differences(found: Mapping, wanted: Mapping, checkpoint) -> list[tuple[str, str, str]]:
    """(field, as recorded, as asked) for each recorded field this run asks otherwise."""
    out = []
    for field, value in wanted.items():
        if field == "engine" or field not in found or (field == "buckets" and value is None):
            continue
        old = found[field]
        if old == value:
            continue
        if field == "streams":
            for iri in sorted(set(old) | set(value)):
                if old.get(iri) != value.get(iri):
                    out.append((field, f"stream {iri} from {old[iri]}" if iri in old else f"no stream {iri}",
                                f"stream {iri} from {value[iri]}" if iri in value else f"no stream {iri}"))
        elif field == "query":
            out.append((field, _shown(field, old, checkpoint), _shown(field, None, checkpoint)))
        elif field == "rules" and old and value and len(old) == len(value):
            out.append((field, f"the --rules in {checkpoint / RECORD}", "other --rules"))
        else:
            out.append((field, _shown(field, old, checkpoint), _shown(field, value, checkpoint)))
    return out


def check(checkpoint, wanted: Mapping) -> dict | None:
    """Refuse a run on ``checkpoint`` that asks for another engine or other options than it was
    created with (module doc): a ``CheckpointError``. ``wanted``: the run's record, or part of it
    (only its fields are compared; ``buckets`` None: any). Returns what the checkpoint was created
    with (``recorded``), None for a new checkpoint. Reads a small file or two: no Spark."""
    found = recorded(checkpoint)
    if found is None:
        return None
    engine = found.get("engine")
    if engine is not None and engine != wanted["engine"]:
        owner, how = _ENGINES.get(engine, (f"the {engine} engine", engine))
        asked, asked_how = _ENGINES.get(wanted["engine"], (f"the {wanted['engine']} engine", wanted["engine"]))
        raise CheckpointError(f"the checkpoint {checkpoint} belongs to {owner} ({how}) and this run asks for {asked} "
                              f"({asked_how}): their states differ, so this run would start over beside that state and "
                              f"write every answer again. Restart with {how}, or give this run a new checkpoint "
                              f"(another --checkpoint DIR, and another --out for its answers)")
    differences = _differences(found, wanted, checkpoint)
    if differences:
        options = ", ".join(dict.fromkeys(_OPTIONS.get(f, f) for f, _old, _new in differences))
        raise CheckpointError(f"the checkpoint {checkpoint} was written with {' and '.join(o for _f, o, _n in differences)}"
                              f"; this run asks for {' and '.join(n for _f, _o, n in differences)}. Its state follows "
                              f"what it was written with: restart with that ({options}), or give this run a new "
                              f"checkpoint (another --checkpoint DIR, and another --out for its answers)")
    return found


def claim(checkpoint, wanted: Mapping) -> dict:
    """``check``, then write ``wanted`` as the record of a checkpoint that has none yet (a new one,
    or one created before records: the fields its layout told are kept). Returns the record in
    force. Call it once the run's options are all checked, before it streams."""
    found = check(checkpoint, wanted)
    if found is not None and (checkpoint / RECORD).exists():
        return found
    record = dict(wanted)
    for field, value in (found or {}).items():
        if value is not None and (field not in record or record[field] is None):
            record[field] = value
    checkpoint.mkdir(parents=True, exist_ok=True)
    fs.write_atomically(checkpoint / RECORD, json.dumps(record, indent=1) + "\n")
    return record
