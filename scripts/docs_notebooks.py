#!/usr/bin/env python3
"""Execute the notebooks in ``notebooks/`` and put the executed copies into the docs site.

The committed ``notebooks/NN-*.ipynb`` files are the sources people edit, stored without outputs. The
site shows them *with* outputs and figures: as a mkdocs hook (``hooks:`` in ``mkdocs.yml``) this
module adds every notebook to the site as ``notebooks/NN-*.ipynb`` (rendered by the ``mkdocs-jupyter``
plugin) and ``notebooks/README.md`` as the section's index page. Each build executes them afresh,
so the figures are those of the code being documented, unless ``PERFMODEL_EXECUTED_NOTEBOOKS`` names
a folder of executed copies written by this module (the test suite executes them once and reuses
them); a copy whose source notebook has changed since is refused, naming it.

As a script it writes executed copies to a folder, for reading with outputs outside the site::

    python scripts/docs_notebooks.py --out build/notebooks

Notebooks run in a kernel of *this* interpreter (a private kernelspec first on ``JUPYTER_PATH``, so a
user's ``python3`` spec for another Python is not picked up), with working directory ``notebooks/``
as when a user opens them in Jupyter, and figures drawn inline (headless) as Jupyter draws them.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "notebooks"
KERNEL = "python3"
CELL_TIMEOUT_S = 300
#: Environment variable naming a folder of executed copies for the docs build to use.
EXECUTED_ENV = "PERFMODEL_EXECUTED_NOTEBOOKS"
#: Notebook metadata key of an executed copy: the SHA-256 of the source file it was executed from.
SOURCE_KEY = "perfmodel_source_sha256"
#: Where the notebooks appear in the site (``docs_dir``-relative).
SITE_FOLDER = "notebooks"


def notebook_paths(folder: Path = NB_DIR) -> list[Path]:
    """The notebooks to show and run: ``NN-*.ipynb`` in ``folder``, in name order."""
    return sorted(folder.glob("[0-9][0-9]-*.ipynb"))


def source_sha256(path: Path) -> str:
    """SHA-256 (hex) of a notebook file's bytes, recorded in its executed copy."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def this_interpreter_kernel() -> Iterator[None]:
    """Within the block, the ``python3`` kernel is ``sys.executable`` and figures are shown inline.

    Writes ipykernel's kernelspec for this interpreter into a temporary folder and puts that folder
    first on ``JUPYTER_PATH``. The repository root goes first on ``PYTHONPATH`` (as ``pythonpath`` in
    pytest's settings), so the notebooks import this checkout's ``perfmodel`` even where the installed
    one is another checkout's (a git worktree). ``MPLBACKEND`` is set to the inline backend, as
    Jupyter does when it is unset: an inherited ``Agg`` (CI, the test suite) would draw figures nobody
    sees, so a notebook without ``%matplotlib inline`` would show none. The previous environment is
    restored on exit.
    """
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager

    saved = {key: os.environ.get(key)
             for key in ("JUPYTER_PATH", "PYTHONPATH", "MPLBACKEND", "PYDEVD_DISABLE_FILE_VALIDATION")}
    with tempfile.TemporaryDirectory(prefix="perfmodel-kernel-") as data_dir:
        write_kernel_spec(path=os.path.join(data_dir, "kernels", KERNEL))
        os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [data_dir, saved["JUPYTER_PATH"]]))
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), saved["PYTHONPATH"]]))
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
        os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"   # the debugger's frozen-modules warning
        try:
            spec = KernelSpecManager().get_kernel_spec(KERNEL)
            if Path(spec.argv[0]).resolve() != Path(sys.executable).resolve():
                raise RuntimeError(f"kernel {KERNEL!r} resolves to {spec.argv[0]}, not {sys.executable}")
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def execute_notebook(path: Path):
    """Execute one notebook from a clean kernel; return ``(notebook, seconds)``.

    Call inside :func:`this_interpreter_kernel`. Raises ``nbclient.exceptions.CellExecutionError``
    (with the failing cell and its traceback) on the first cell that raises. The returned notebook
    carries the source file's SHA-256 under ``metadata[SOURCE_KEY]``.
    """
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name=KERNEL, timeout=CELL_TIMEOUT_S,
                                     resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    nb.metadata[SOURCE_KEY] = source_sha256(path)
    return nb, elapsed


def write_executed(paths: list[Path], out: Path, log=print) -> Path:
    """Execute ``paths`` and write the executed copies, same file names, into ``out``; return ``out``."""
    import nbformat

    out.mkdir(parents=True, exist_ok=True)
    with this_interpreter_kernel():
        for path in paths:
            nb, elapsed = execute_notebook(path)
            nbformat.write(nb, out / path.name)
            log(f"executed {path.name} in {elapsed:.1f} s")
    return out


def check_executed(folder: Path, paths: list[Path]) -> None:
    """Raise ``ValueError`` naming each source in ``paths`` whose executed copy in ``folder`` is
    missing or was executed from a different version of the file."""
    problems = []
    for path in paths:
        copy = folder / path.name
        if not copy.is_file():
            problems.append(f"{path.name}: no executed copy in {folder}")
            continue
        recorded = json.loads(copy.read_text(encoding="utf-8")).get("metadata", {}).get(SOURCE_KEY)
        if recorded != source_sha256(path):
            problems.append(f"{path.name}: the copy in {folder} was executed from another version "
                            "of the file")
    if problems:
        raise ValueError(f"{EXECUTED_ENV}={folder}: " + "; ".join(problems))


# ---------------------------------------------------------------------------------------------
# mkdocs hook
# ---------------------------------------------------------------------------------------------

_stage: tempfile.TemporaryDirectory | None = None


def _stage_executed(paths: list[Path]) -> Path:
    """A temporary folder whose ``notebooks/`` holds this build's executed copies: those in
    ``$PERFMODEL_EXECUTED_NOTEBOOKS`` if it is set (checked fresh), otherwise executed now."""
    import logging
    import shutil

    global _stage
    if _stage is None:
        _stage = tempfile.TemporaryDirectory(prefix="perfmodel-docs-notebooks-")
    target = Path(_stage.name) / SITE_FOLDER
    given = os.environ.get(EXECUTED_ENV)
    if given:
        check_executed(Path(given), paths)
        target.mkdir(exist_ok=True)
        for path in paths:
            shutil.copyfile(Path(given) / path.name, target / path.name)
    else:
        log = logging.getLogger("mkdocs.hooks.docs_notebooks").info
        start = time.perf_counter()
        write_executed(paths, target, log=log)
        log(f"executed {len(paths)} notebooks in {time.perf_counter() - start:.0f} s")
    return Path(_stage.name)


try:
    from mkdocs.plugins import event_priority
except ImportError:            # running as a script without the docs tools: the hook is not used
    def event_priority(priority):
        return lambda function: function


@event_priority(50)   # before mkdocs-jupyter's on_files, which turns .ipynb files into pages
def on_files(files, config):
    """Add the executed notebooks and ``notebooks/README.md`` (the section's index page) to the site.

    The files get a real ``src_dir`` (mkdocs-jupyter's page wrapper cannot read a generated file).
    """
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    paths = notebook_paths()
    try:
        stage = _stage_executed(paths)
    except ValueError as exc:          # stale or missing copies: one line, not a traceback
        raise PluginError(str(exc)) from exc
    site = {"dest_dir": config["site_dir"], "use_directory_urls": config["use_directory_urls"]}
    for path in paths:
        files.append(File(f"{SITE_FOLDER}/{path.name}", src_dir=str(stage), **site))
    files.append(File(f"{SITE_FOLDER}/README.md", src_dir=str(ROOT), **site))
    return files


def on_post_build(config):
    """Remove this build's staged copies (a given ``$PERFMODEL_EXECUTED_NOTEBOOKS`` folder stays)."""
    global _stage
    if _stage is not None:
        _stage.cleanup()
        _stage = None


def on_serve(server, config, builder):
    """``mkdocs serve`` rebuilds when a notebook changes."""
    server.watch(str(NB_DIR))
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute notebooks/NN-*.ipynb and write executed copies.")
    parser.add_argument("--out", type=Path, required=True, help="folder for the executed copies")
    parser.add_argument("names", nargs="*", help="notebook file names (default: all)")
    args = parser.parse_args(argv)
    paths = notebook_paths()
    if args.names:
        unknown = sorted(set(args.names) - {p.name for p in paths})
        if unknown:
            parser.error(f"unknown notebook(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(p.name for p in paths)}")
        paths = [p for p in paths if p.name in args.names]
    write_executed(paths, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
