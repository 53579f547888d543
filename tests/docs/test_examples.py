"""Every Python example and every command of the README and the user guide, run against a real
``rocketq server`` (free ports, a temp dir) and checked against the output the page shows; the
rules are in :mod:`tests.docs.docrunner`'s docstring. One server per page, shared by its
examples and started only for a page that needs one; 5-25 s a page."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.docrunner import ROOT, Block, Session, appears_in_order, blocks, commands, matches

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs" / "guide").glob("*.md"))]
PAGES_WITH_EXAMPLES = [p for p in PAGES if blocks(p)]


@pytest.mark.integration
@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run_and_print_what_they_show(page: Path, tmp_path: Path) -> None:
    session = Session(tmp_path)
    try:
        for block in blocks(page):
            if block.lang == "python":
                session.run_python(block)
            else:
                session.run_console(block)
    except BaseException:
        session.finish(check=False)
        raise
    session.finish()


def test_the_readme_and_the_guide_have_examples() -> None:
    """The runner finds what it should: the README's Python example with its output, its tour."""
    readme = blocks(ROOT / "README.md")
    assert any(b.lang == "python" and b.output for b in readme)
    assert any(b.lang == "console" and commands(b) for b in readme)
    assert (ROOT / "docs" / "guide" / "tour.md") in PAGES_WITH_EXAMPLES


def test_every_python_block_of_the_pages_is_an_example() -> None:
    """No fence hides code from the runner: the pages' code is ```python or ```console (run), or
    ```text (output), ```bash only for the install and CI commands of the README's markers."""
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for lang in ("py", "pycon", "shell", "sh"):
            assert f"```{lang}\n" not in text, f"{page.name}: a ```{lang} block the runner would not run"


@pytest.mark.parametrize(
    ("expected", "actual", "whole", "ordered"),
    [
        (["a ... c"], ["a b c"], True, True),
        (["a ... c"], ["a b d"], False, False),
        (["x", "...", "z"], ["x", "y1", "y2", "z"], True, True),
        (["x", "z"], ["x", "y", "z"], False, True),
        (["z", "x"], ["x", "y", "z"], False, False),
        (["a...b"], ["a\tline b  "], True, True),
        ([], [], True, True),
        (["only"], ["only", "more"], False, True),
    ],
)
def test_the_loose_comparison_rule(
    expected: list[str], actual: list[str], whole: bool, ordered: bool
) -> None:
    assert matches(expected, actual) is whole
    assert appears_in_order(expected, actual) is ordered


def test_blocks_pair_a_python_example_with_its_output(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "x\n```python\nprint(1)\n```\n\n```text\n1\n```\n```console\n$ rocketq info\nrocketq ...\n```\n"
    )
    found = blocks(page)
    assert found == [
        Block(page, 2, "python", "print(1)", "1"),
        Block(page, 9, "console", "$ rocketq info\nrocketq ..."),
    ]
    assert [c.line for c in commands(found[1])] == ["rocketq info"]
