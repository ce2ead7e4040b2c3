"""The project's own documentation (``docs/``) stays complete and self-contained.

- every study command of the CLI, and every study the batch runner knows, has a page
  ``docs/studies/<command>.md`` listed in ``docs/README.md``, with the sections every study page
  has, and naming every flag of its command;
- every relative link in ``docs/`` resolves to a file of the repository;
- no page points outside the repository (developer notes, absolute paths) or to issue numbers;
- every public function and class of ``simulator/`` has a docstring of its own.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from simulator.batch.registry import STUDIES
from simulator.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# Commands that are tools, not studies: they get a line in docs/README.md, not a page.
TOOL_COMMANDS = {
    "trace",
    "interop",
    "frames",
    "capture",
    "crossstream-bodies",
    "batch",
    "slides",
    "bench",
    "demo",
    "lab",
}

STUDY_SECTIONS = ("## The question", "## The model", "## Parameters", "## Outputs")

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FORBIDDEN = [
    (re.compile(r"research\.md"), "a developer note outside the repository"),
    (re.compile(r"\.\./shared|/shared/"), "a folder outside the repository"),
    (re.compile(r"/work/"), "an absolute path of one machine"),
    (re.compile(r"\bissue\s+#?\d+", re.IGNORECASE), "an issue number"),
    (re.compile(r"\bthe brief\b", re.IGNORECASE), "a developer brief"),
]


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _study_commands() -> list[str]:
    return sorted(set(_commands()) - TOOL_COMMANDS)


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def test_docs_folder_has_pages():
    assert (DOCS / "README.md").is_file()
    assert len(_pages()) > 1


@pytest.mark.parametrize("command", _study_commands())
def test_every_study_command_has_a_page(command):
    page = DOCS / "studies" / f"{command}.md"
    assert page.is_file(), f"workbench {command} has no docs/studies/{command}.md (or add it to TOOL_COMMANDS)"
    text = page.read_text(encoding="utf-8")
    for section in STUDY_SECTIONS:
        assert section in text, f"{page.name} lacks the section {section!r}"
    assert re.search(r"^## .*[Rr]eference", text, re.MULTILINE), f"{page.name} lacks its reference numbers"
    assert re.search(r"^## .*(limitations|Departures)", text, re.MULTILINE), f"{page.name} lacks its limitations"
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    assert f"(studies/{command}.md)" in index, f"docs/README.md does not list studies/{command}.md"


@pytest.mark.parametrize("command", _study_commands())
def test_study_page_names_every_flag(command):
    """A flag added to a study command must be documented on its page."""
    text = (DOCS / "studies" / f"{command}.md").read_text(encoding="utf-8")
    parser = _commands()[command]
    missing = [
        s for a in parser._actions for s in a.option_strings if s.startswith("--") and s != "--help" and s not in text
    ]
    assert not missing, f"docs/studies/{command}.md does not mention {', '.join(missing)}"


def test_every_batch_study_has_a_page():
    for name in STUDIES:
        assert (DOCS / "studies" / f"{name}.md").is_file(), f"batch study {name} has no page"


def test_tool_commands_still_exist_and_are_named_in_the_index():
    """TOOL_COMMANDS must not hide a study that was renamed: every name in it is a command,
    and the index says what each is."""
    assert TOOL_COMMANDS <= set(_commands())
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for name in TOOL_COMMANDS:
        assert f"`{name}`" in index, f"docs/README.md does not name the tool command {name}"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_relative_links_resolve(page):
    text = page.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL or an anchor on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(ROOT), f"{page.name}: link {target} leaves the repository"
        assert path.exists(), f"{page.name}: link {target} points to nothing"


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_pages_stay_inside_the_repository(page):
    text = page.read_text(encoding="utf-8")
    for pattern, what in FORBIDDEN:
        match = pattern.search(text)
        assert match is None, f"{page.name} mentions {match.group(0)!r}: {what}"


def test_every_page_is_reachable_from_the_index():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {(DOCS / t.split("#", 1)[0]).resolve() for t in LINK.findall(index)}
    for page in _pages():
        if page.name != "README.md" or page.parent != DOCS:
            assert page.resolve() in linked, f"{page.relative_to(DOCS)} is not listed in docs/README.md"


def _public_items(tree: ast.Module):
    """Module-level functions and classes not starting with ``_``, and the public
    (not ``_``-prefixed, so not dunder) methods of those classes, as (name, node)."""
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if isinstance(node, defs) and not node.name.startswith("_"):
            yield node.name, node
            if isinstance(node, ast.ClassDef):
                for sub in node.body:
                    if isinstance(sub, defs[:2]) and not sub.name.startswith("_"):
                        yield f"{node.name}.{sub.name}", sub


def test_public_functions_and_classes_have_docstrings():
    """Every public function and class, and every public method of one, says what it is in a
    docstring of its own (one line is enough)."""
    missing = []
    for path in sorted((ROOT / "simulator").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        missing += [f"{rel}:{node.lineno} {name}" for name, node in _public_items(tree) if not ast.get_docstring(node)]
    assert not missing, f"{len(missing)} public items have no docstring:\n" + "\n".join(missing)
