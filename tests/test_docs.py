"""The documentation: the MkDocs site builds without a warning, and every relative link in README.md
and docs/*.md resolves (the file exists; a ``#anchor`` names a heading of the target). Spark-free.
"""
from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
INLINE_LINK = re.compile(r"!?\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
EXTERNAL = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")  # http:, https:, mailto:, ...


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks."""
    out, fenced = [], None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if match:
            if fenced is None:
                fenced = match.group(1)
            elif match.group(1) == fenced:
                fenced = None
            continue
        if fenced is None:
            out.append((number, line))
    return out


def heading_text(raw: str) -> str:
    """A heading's text as the rendered page shows it: links by their text, code spans by their code."""
    text = INLINE_LINK.sub(lambda m: m.group(1), raw)
    return CODE_SPAN.sub(lambda m: m.group(2), text)


def mkdocs_slug(text: str) -> str:
    """Python-Markdown's toc slug, which MkDocs uses: ASCII, lowercase, punctuation but '-' and '_'
    dropped, runs of spaces and '-' one '-'."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def github_slug(text: str) -> str:
    """GitHub's heading anchor: lowercase, punctuation but '-' and '_' dropped, each space a '-'."""
    text = re.sub(r"[^\w\s-]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> tuple[set[str], set[str]]:
    """The anchors of a page's headings: (MkDocs's, GitHub's), repeated headings numbered as each does."""
    mkdocs, github = [], []
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if match:
            text = heading_text(match.group(2))
            for seen, slug, sep in ((mkdocs, mkdocs_slug(text), "_"), (github, github_slug(text), "-")):
                base, n = slug, 0
                while slug in seen:
                    n += 1
                    slug = f"{base}{sep}{n}"
                seen.append(slug)
    return set(mkdocs), set(github)


def links(path: Path) -> list[tuple[int, str]]:
    """(line number, target) of every link and image in a page's prose, code spans left out."""
    out = []
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        line = CODE_SPAN.sub("", line)
        out += [(number, m.group(2)) for m in INLINE_LINK.finditer(line)]
        definition = REFERENCE_DEF.match(line)
        if definition:
            out.append((number, definition.group(1)))
    return out


def broken_links(page: Path, root: Path = ROOT, docs: Path = DOCS) -> list[str]:
    """What is wrong with the relative links of a page (nothing: an empty list)."""
    problems = []
    for number, target in links(page):
        where = f"{page.relative_to(root)}:{number}: {target!r}"
        if not target:
            problems.append(f"{where}: empty link")
            continue
        if EXTERNAL.match(target):
            continue  # not fetched
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part).resolve() if file_part else page.resolve()
        if file_part.startswith("/"):
            problems.append(f"{where}: absolute path; link relative to the page")
            continue
        if not resolved.exists():
            shown = resolved.relative_to(root) if resolved.is_relative_to(root) else resolved
            problems.append(f"{where}: no such file {shown}")
            continue
        if page.parent == docs and not resolved.is_relative_to(docs):
            problems.append(f"{where}: leaves docs/, which the site cannot link; name the file in a code span")
            continue
        if anchor:
            if resolved.is_dir() or resolved.suffix != ".md":
                problems.append(f"{where}: an anchor into a file that is not a Markdown page")
                continue
            mkdocs, github = anchors(resolved)
            if anchor not in mkdocs or anchor not in github:
                problems.append(f"{where}: no heading of {resolved.name} gives the anchor #{anchor} "
                                f"(MkDocs: {'yes' if anchor in mkdocs else 'no'}, "
                                f"GitHub: {'yes' if anchor in github else 'no'})")
    return problems


def test_site_builds_without_warnings(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "WARNING" not in output, output
    assert (tmp_path / "site" / "index.html").exists(), output


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    assert not broken_links(page), "\n".join(broken_links(page))


def test_every_docs_page_is_reached_from_the_readme_or_the_home_page():
    linked = set()
    for page in (ROOT / "README.md", DOCS / "index.md"):
        for _, target in links(page):
            file_part = target.partition("#")[0]
            if file_part and not EXTERNAL.match(target):
                linked.add((page.parent / file_part).resolve())
    missing = [p.name for p in DOCS.glob("*.md") if p.resolve() not in linked and p.name != "index.md"]
    assert not missing, f"docs pages no link from README.md or docs/index.md reaches: {missing}"


def test_the_link_checker_finds_a_broken_link(tmp_path):
    """The checker itself: a missing file and a missing anchor are reported, good links are not."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A page\n\n## Some heading: with punctuation\n", encoding="utf-8")
    page = docs / "b.md"
    page.write_text("[ok](a.md) [ok](a.md#some-heading-with-punctuation) [ok](#b)\n\n# B\n\n"
                    "[bad](missing.md) [bad](a.md#no-such-heading)\n\n```sh\n[not a link](nowhere.md)\n```\n"
                    "`[code](nowhere.md)`\n", encoding="utf-8")
    problems = broken_links(page, root=tmp_path, docs=docs)
    assert len(problems) == 2, problems
    assert "missing.md" in problems[0] and "#no-such-heading" in problems[1]
