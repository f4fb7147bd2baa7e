"""``rsp-sidecar package``: the project as one zip for ``spark-submit --py-files``, and a launcher.

    rsp-sidecar package [--out DIR] [--with-dependencies]

Writes ``DIR/rsp_sidecar-VERSION.zip`` — the packages ``rdfcore``, ``reasoner``, ``paths``, ``cep``, ``jobs``,
``ontologies``, ``scenarios`` with their resources (grammars, logging configuration, example files), which load
through ``importlib.resources`` and so work from the zip — and ``DIR/rsp_sidecar_main.py``, a
launcher taking the same arguments as ``rsp-sidecar`` (spark-submit needs a main file). With
``--with-dependencies`` the zip also carries the pure-Python distributions the driver imports
(lark, rdflib, owlrl, pyparsing), for a driver host whose Python has only the binary ones
(numpy, pyarrow, numba; xxhash is optional: a pure-Python fallback is used without it).

Executors run project code in Python: the keyed continuous operator's processor, BIND's exact
arithmetic and other Arrow UDFs. A job on a cluster whose executors do not share the driver's
files therefore ships the zip with ``--py-files``; their Python needs numpy, pandas, pyarrow and
protobuf. The artifact is checked after it is written: it is
imported in a child Python whose ``sys.path`` holds the zip and the site-packages, nothing else,
and both grammars are built from it.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

from jobs.errors import job_main
from jobs.jars import cluster_packages
from rdfcore.errors import SidecarError

PACKAGES = ("rdfcore", "reasoner", "paths", "cep", "jobs", "ontologies", "scenarios")
#: Pure-Python distributions the driver imports (``--with-dependencies``).
PURE_DEPENDENCIES = ("lark", "rdflib", "owlrl", "pyparsing")
_SKIP_SUFFIXES = (".pyc", ".pyo")

LAUNCHER = '''"""rsp-sidecar's command line under spark-submit: the project comes from --py-files."""
import sys

from jobs.cli import main

if __name__ == "__main__":
    sys.exit(main())
'''

CHECK = r"""
import sys
zip_path = sys.argv[1]
import paths, cep, reasoner, jobs.cli, scenarios.membership, scenarios.milan_routing, scenarios.vienna_transit
for module in (paths, cep, reasoner, jobs.cli, scenarios.membership):
    assert module.__file__.startswith(zip_path), (module.__name__, module.__file__)
import importlib
for _name, job, _help in jobs.cli.COMMANDS:   # each command's job, imported only when chosen
    assert importlib.import_module(job).__file__.startswith(zip_path), job
paths.parse("(^<http://e/beg>/<http://e/end>)+")
from cep import parse
print("ok")
"""


class PackageError(SidecarError):
    pass


def version() -> str:
    try:
        return importlib.metadata.version("rsp-sidecar")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


def _files(root: Path):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if not name.endswith(_SKIP_SUFFIXES) and not name.startswith("."):
                yield Path(folder) / name


def _distribution_roots(name: str) -> list[Path]:
    """The top-level package directories of an installed pure-Python distribution."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise PackageError(f"--with-dependencies: {name} is not installed in this Python "
                           f"({sys.executable}); install the project first") from None
    files = [str(f) for f in dist.files or []]
    if any(f.endswith((".so", ".pyd")) for f in files):
        raise PackageError(f"--with-dependencies: {name} has compiled modules; install it on the driver host")
    tops = sorted({f.split("/")[0] for f in files if f.endswith(".py") and "/" in f
                   and not f.split("/")[0].endswith((".dist-info", ".data")) and not f.startswith("..")})
    return [Path(dist.locate_file(top)) for top in tops]


def build(out: Path, with_dependencies: bool = False) -> tuple[Path, Path]:
    """Write the zip and the launcher into ``out``; returns their paths."""
    root = Path(__file__).resolve().parent.parent
    missing = [p for p in PACKAGES if not (root / p / "__init__.py").is_file()]
    if missing:
        raise PackageError(f"cannot package from {root}: no package {', '.join(missing)} there "
                           f"(run it from a source checkout or an installed project)")
    out.mkdir(parents=True, exist_ok=True)
    artifact = out / f"rsp_sidecar-{version()}.zip"
    partial = artifact.with_name(f".{artifact.name}.{os.getpid()}")
    trees = [root / p for p in PACKAGES]
    if with_dependencies:
        trees += [top for name in PURE_DEPENDENCIES for top in _distribution_roots(name)]
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        for tree in trees:
            for file in _files(tree):
                archive.write(file, file.relative_to(tree.parent).as_posix())
    os.replace(partial, artifact)
    launcher = out / "rsp_sidecar_main.py"
    launcher.write_text(LAUNCHER, encoding="utf-8")
    return artifact, launcher


def check(artifact: Path) -> None:
    """Import the project from ``artifact`` alone (plus site-packages) in a child Python."""
    site = [sysconfig.get_paths()[key] for key in ("purelib", "platlib")]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(artifact.resolve()), *dict.fromkeys(site)])
    # -S: no site module, so no .pth file (an editable install of this project) adds the source tree
    done = subprocess.run([sys.executable, "-S", "-c", CHECK, str(artifact.resolve())], env=env,
                          cwd=artifact.parent, capture_output=True, text=True)
    if done.returncode != 0 or done.stdout.strip() != "ok":
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise PackageError(f"{artifact}: the project does not import from the zip: {last}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="dist", help="directory for the zip and the launcher (default: dist)")
    parser.add_argument("--with-dependencies", action="store_true",
                        help="also bundle the pure-Python dependencies (lark, rdflib, owlrl, pyparsing)")


def run(args: argparse.Namespace) -> int:
    artifact, launcher = build(Path(args.out), args.with_dependencies)
    check(artifact)
    print(f"{artifact} ({artifact.stat().st_size:,} bytes; imports and builds its grammars from the zip)")
    print(f"{launcher} (spark-submit's main file; same arguments as rsp-sidecar)")
    print("\nfor example:")
    print(f"  spark-submit --master yarn --deploy-mode cluster --py-files {artifact} \\")
    print(f"      {launcher} materialize --ontology schema.ttl --out closure")
    print(cluster_packages())
    return 0


def main(argv: list[str] | None = None) -> int:
    return job_main("rsp-sidecar package", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    sys.exit(main())
