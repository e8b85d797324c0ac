"""The README and docs/: the first screen holds the quick start, what CI runs is what the README
says, and every link, every path of the repository they name and every reference they make is
there to follow."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FIRST_SCREEN = 40   # lines
QUICK_START = ["pip install -e . && specscope", "pip install -e '.[test]' && python -m pytest"]
MOST_TYPED = ["specscope ", "specscope run ", "--with-baseline", "specscope doctor ", "specscope bench "]


def test_the_readmes_first_screen_holds_the_quick_start_and_a_screenshot():
    first = README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN]
    text = "\n".join(first)
    assert [line for line in first if line in QUICK_START] == QUICK_START
    missing = [c for c in MOST_TYPED if c not in text]
    assert not missing, f"the README's first {FIRST_SCREEN} lines lack {missing}"
    images = re.findall(r'<img src="([^"]+)"|!\[[^\]]*\]\(([^)]+)\)', text)
    assert images, f"no screenshot in the README's first {FIRST_SCREEN} lines"
    for image in filter(None, sum(images, ())):
        assert (ROOT / image).is_file() and (ROOT / image).stat().st_size < 300_000, image


def test_ci_runs_exactly_the_readmes_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in ci if line.strip() and not line.startswith("#")]
    assert commands[-1] == QUICK_START[1]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in page.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")}


def test_every_link_between_the_pages_resolves():
    broken = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        links = re.findall(r"\]\(([^)\s]+)\)|^\[[^\]]+\]:\s*(\S+)|src=\"([^\"]+)\"", text, re.M)
        for link in filter(None, sum(links, ())):
            if re.match(r"[a-z]+:", link):
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page
            if not target.exists() or (anchor and anchor not in anchors(target)):
                broken.append(f"{page.relative_to(ROOT)}: {link}")
    assert not broken, broken


def test_every_repository_path_the_pages_name_exists():
    named = re.compile(r"(?<![\w./~-])(?:core|app|tests|packaging|resources|docs|\.ci)/[\w./*-]*\w")
    missing = sorted({f"{page.relative_to(ROOT)}: {p}" for page in PAGES
                      for p in named.findall(page.read_text(encoding="utf-8"))
                      if not any(ROOT.glob(p))})
    assert not missing, missing


def test_no_references_to_documents_outside_the_repository():
    """The design notes (seed 000, seed 003 with their sections) and the project's issue numbers
    are not in the repository: the pages and the code say what they meant in words, or link to
    llama.cpp's source."""
    outside = re.compile(r"seed 00\d|§\s?\d|(?<!llama\.cpp )(?<!\[)\bissues? \d+|LLAMA_CPP_NOTES", re.I)
    files = PAGES + sorted(ROOT.glob("core/**/*.py")) + sorted(ROOT.glob("app/**/*.py"))
    found = [f"{f.relative_to(ROOT)}:{n}: {line.strip()}" for f in files
             for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             if outside.search(line)]
    assert not found, "\n".join(found)
