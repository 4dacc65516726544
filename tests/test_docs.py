"""The docs: every relative link and anchor in README.md and docs/ resolves (GitHub's heading
anchors), and the README's first job and its commands work as its reader types them."""
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def prose(path: Path) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(path: Path) -> set[str]:
    """GitHub's anchors of the page's headings: lower case, punctuation dropped, spaces as hyphens."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path):
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(path: Path) -> list[str]:
    return [target for line in prose(path) for target in LINK.findall(re.sub(r"`[^`]*`", "", line))
            if not re.match(r"[a-z]+:", target)]


def test_there_are_docs_pages_and_the_readme_stays_short():
    assert len(PAGES) > 10
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    broken = []
    for target in links(page):
        file, _, anchor = target.partition("#")
        resolved = (page.parent / file).resolve() if file else page
        if not resolved.exists():
            broken.append(f"{target}: no file {resolved.relative_to(ROOT) if resolved.is_relative_to(ROOT) else resolved}")
        elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    assert broken == []


def test_every_docs_page_is_reached_from_the_readme_or_another_page():
    reached = {(page.parent / t.partition("#")[0]).resolve() for page in PAGES for t in links(page)
               if t.partition("#")[0]}
    assert [p.name for p in PAGES[1:] if p.resolve() not in reached] == []


def readme_tour() -> tuple[str, list[list[str]]]:
    """The README's first job, and the commands of its console blocks (each ``&&`` part apart)."""
    text = (ROOT / "README.md").read_text()
    job = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    commands = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                for part in line[2:].split(" # ")[0].split("&&"):
                    commands.append(shlex.split(part))
    return job, commands


def test_the_readme_first_job_and_its_commands_work_as_typed(shell):
    job, commands = readme_tour()
    Path("wordcount.py").write_text(job)
    assert len(commands) >= 10 and all(command[0] == "rill" for command in commands)
    for command in commands:
        code, out, err = shell(*command[1:], timeout=600)
        assert code == 0, (command, err)
        if command[1] == "run":
            assert sorted(out.split()) == ["(a,1)", "(a,2)", "(b,1)"], command
            assert re.search(r"^rill: run \w+ FINISHED", err, re.M), command
        elif "--rerun" in command:
            assert "identical sequence" in out, out
        elif command[1] == "sql":
            assert re.search(r"^Source: Collection Source +3$", out, re.M), out
    assert Path("run.html").read_text().lower().startswith("<!doctype html>")


def lines_of(*places: str) -> int:
    """Lines of Python under each place (a folder, or ``kernel/*.py`` for a folder's own modules)."""
    paths = [p for place in places for p in (ROOT.glob(place) if "*" in place else (ROOT / place).rglob("*.py"))]
    return sum(len(p.read_text().splitlines()) for p in paths)


def test_the_layout_table_counts_lines_as_the_code_has_them():
    rows = [line for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| `")]
    counted = {}
    for row in rows:
        first = row.split(" | ")[0]
        core = re.search(r"the (\d+) modules at its root, `contracts/`, `cli/`; (\d+\.\d)k lines", first)
        if core:
            assert int(core.group(1)) == len(list((ROOT / "kernel").glob("*.py")))
            counted["kernel core"] = (float(core.group(2)), lines_of("kernel/*.py", "kernel/contracts", "kernel/cli"))
        elif figure := re.search(r"\((\d+\.\d)k\)", first):
            places = re.findall(r"`([^`]+)`", first)
            counted[", ".join(places)] = (float(figure.group(1)), lines_of(*places))
    assert len(counted) >= 8
    wrong = {name: (said, real) for name, (said, real) in counted.items() if abs(said * 1000 - real) > 100}
    assert wrong == {}


def test_the_kernel_docstring_counts_lines_as_the_code_has_them():
    import kernel

    text = " ".join(kernel.__doc__.split())
    counted = {"kernel core": (float(re.search(r"\((\d+\.\d)k lines\)", text).group(1)),
                               lines_of("kernel/*.py", "kernel/contracts", "kernel/cli"))}
    for item in re.findall(r"- ((?::mod:`kernel\.\w+`(?:, )?)+) \((\d+\.\d)k", text):
        places = [f"kernel/{name}" for name in re.findall(r"`kernel\.(\w+)`", item[0])]
        counted[", ".join(places)] = (float(item[1]), lines_of(*places))
    assert len(counted) == 7
    wrong = {name: (said, real) for name, (said, real) in counted.items() if abs(said * 1000 - real) > 100}
    assert wrong == {}
