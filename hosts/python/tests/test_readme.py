"""The README's Python quickstart runs as written, and gives the snapshot
id the Rust host gives for the same request."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def snippets(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def test_the_quickstart_runs_and_gives_the_rust_hosts_snapshot_id():
    (code,) = snippets(ROOT / "README.md")
    assert len(code.strip().splitlines()) <= 20
    out = io.StringIO()
    scope: dict = {}
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), scope)
    expected = json.loads((ROOT / "tests/expected/readme-quickstart.json").read_text())
    snapshot_id = expected["reply"]["pack"]["snapshot"]["id"]
    assert scope["pack"].snapshot.id == snapshot_id
    assert snapshot_id in out.getvalue()
    assert "Refunds take five business days." in out.getvalue()


def test_the_package_readme_snippets_run():
    for code in snippets(ROOT / "hosts/python/README.md"):
        exec(compile(code, "hosts/python/README.md", "exec"), {})


def test_every_snippet_passes_mypy_strict(tmp_path: Path):
    """What a typed application writes from the READMEs type-checks as
    written: required fields, names as plain strings, the callbacks'
    signatures."""
    files = []
    for readme in (ROOT / "README.md", ROOT / "hosts/python/README.md"):
        for i, code in enumerate(snippets(readme)):
            files.append(tmp_path / f"{readme.parent.name}_{i}.py")
            files[-1].write_text(code)
    # And the drop-ins, which are what users import from LangChain code.
    package = ROOT / "hosts/python/src/ctxpack_wasm"
    files += [package / "chat.py", package / "langchain.py", package / "llamaindex.py"]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *map(str, files)],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
