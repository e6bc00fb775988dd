"""The package's build backend: setuptools, with the WebAssembly component
put inside the package first.

Every way of building the package from the repository — ``pip install
./hosts/python``, ``pip wheel``, ``python -m build`` (its sdist carries the
component, so the wheel built from it has it too) — builds the component
with cargo (a no-op when it is fresh) and copies it into
``src/ctxpack_wasm/``. Outside the repository (an sdist), the component it
carries is used. Without either, the build fails saying how to get one:
a package without its component would install and fail at ``Builder()``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (the rest of PEP 517/660, as setuptools has it)
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

HERE = Path(__file__).resolve().parents[1]
COMPONENT = HERE / "src" / "ctxpack_wasm" / "ctxpack.wasm"


def _repository() -> Path | None:
    """The repository this package is built in, if it is."""
    root = HERE.parents[1]
    if (root / "Cargo.toml").is_file() and (root / "crates" / "ctxpack-artifacts").is_dir():
        return root
    return None


def _build(root: Path) -> Path:
    """Builds the component with cargo; its path."""
    if shutil.which("rustup"):
        # rust-toolchain.toml names the toolchain and the wasm target.
        subprocess.run(["rustup", "toolchain", "install"], cwd=root, check=True,
                       stdout=subprocess.DEVNULL)
    # cargo's progress goes to stderr, which `pip wheel -v` / `pip install
    # -v` shows: a first build compiles the component for minutes.
    print("ctxpack: building the component with cargo (minutes the first time)", file=sys.stderr)
    done = subprocess.run(
        ["cargo", "build", "-p", "ctxpack-artifacts", "--message-format=json"],
        cwd=root, check=True, stdout=subprocess.PIPE, text=True,
    )
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if (message.get("reason") == "build-script-executed"
                and message.get("package_id", "").find("ctxpack-artifacts") != -1):
            built = Path(message["out_dir"]) / "ctxpack.wasm"
            if built.is_file():
                return built
    raise RuntimeError("cargo built ctxpack-artifacts but named no ctxpack.wasm")


def _component() -> None:
    """Puts the component inside the package, or says why it cannot."""
    root = _repository()
    if root is not None and shutil.which("cargo") and not os.environ.get("CTXPACK_WASM_NO_BUILD"):
        shutil.copyfile(_build(root), COMPONENT)
        return
    if COMPONENT.is_file():
        return
    raise RuntimeError(
        "ctxpack-wasm: the WebAssembly component (src/ctxpack_wasm/ctxpack.wasm) is not here "
        "and cannot be built: build from the ctxpack repository with Rust installed "
        "(https://rustup.rs; `pip install ./hosts/python` builds it), or install a built wheel."
    )


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _component()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    _component()
    return _setuptools.build_sdist(sdist_directory, config_settings)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _component()
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
