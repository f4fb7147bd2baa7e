"""The three scenarios of the mission as running services (README "Scenarios").

* ``cep.io.tsnt`` — timestamped N-Triples lines split and checked in bulk on the driver (pyarrow);
* ``scenarios.membership`` — class membership of streamed subjects against a published closure
  (the Tracheobionta service, ``jobs/tracheobionta.py``);
* ``scenarios.plant_stream`` — the seeded, replayable stream of plant observations it is tested
  and benchmarked on.
"""
