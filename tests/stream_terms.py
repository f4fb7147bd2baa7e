"""The small vocabulary of the randomized CEP tests (reference vs Spark, continuous, driver-side):
one stream, one window name, three subjects, two objects, three predicates."""
from __future__ import annotations

EX = "http://ex/"
STREAM_IRI = f"<{EX}stream>"
WINDOW_IRI = f"<{EX}W>"
SUBJECTS = [f"<{EX}{n}>" for n in ("a", "b", "c")]
OBJECTS = [f"<{EX}{n}>" for n in ("m", "h")]
PREDICATES = [f"<{EX}p{i}>" for i in range(3)]
