"""Output files of the offline commands: checked before any work, written atomically.

A command that runs for minutes must not fail at its end because an output directory is
missing, and must not leave half its results behind when one output fails: ``rq-eval``
wrote its JSON report, then died writing ``--csv`` under a missing directory (issue 33). So:

- :func:`check_outputs` runs first, before any input is read: each file's directory must
  exist and be writable, and the path must not be a directory; each report directory must
  be one, or be creatable in a writable directory;
- :class:`Outputs` collects every output of a run and :meth:`Outputs.commit` writes them all
  to temporary files beside their targets, then renames each into place (``os.replace``,
  atomic on POSIX): a failure while writing leaves no output at all; a reader never sees a
  half-written file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from verdictflow.exceptions import VerdictflowError


class OutputPathError(VerdictflowError):
    """An output path that cannot be written."""


def check_outputs(files: Sequence[Path | None], directories: Sequence[Path | None] = ()) -> None:
    """Refuse, with one line, output paths that cannot be written (see the module doc)."""
    for path in filter(None, files):
        if path.is_dir():
            raise OutputPathError(f"{path}: is a directory, expected a file to write")
        _writable_dir(path.parent if str(path.parent) else Path("."), path)
    for path in filter(None, directories):
        if path.exists():
            if not path.is_dir():
                raise OutputPathError(f"{path}: exists and is not a directory")
            _writable_dir(path, path)
        else:
            created = [p for p in (path, *path.parents) if not p.exists()]
            try:  # the surest test is to make it (and leave nothing behind)
                path.mkdir(parents=True)
            except OSError as exc:
                raise OutputPathError(f"{path}: cannot create it ({exc.strerror})") from None
            try:
                _writable_dir(path, path)
            finally:
                for made in created:  # the leaf first
                    with contextlib.suppress(OSError):
                        made.rmdir()


def _writable_dir(directory: Path, target: Path) -> None:
    """A file can be created in ``directory`` (tried, not inferred from permission bits: a
    root process passes ``os.access`` on read-only file systems such as /proc)."""
    if not directory.is_dir():
        raise OutputPathError(f"{target}: no such directory {directory}")
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        raise OutputPathError(
            f"{target}: directory {directory} is not writable ({exc.strerror})"
        ) from None


class Outputs:
    """The files of one run, written together by :meth:`commit`."""

    def __init__(self) -> None:
        self._files: list[tuple[Path, bytes]] = []

    def add(self, path: Path, data: bytes) -> None:
        self._files.append((path, data))

    def commit(self) -> list[Path]:
        """Write every file to a temporary file beside it, then rename each into place."""
        staged: list[tuple[str, Path]] = []
        try:
            for path, data in self._files:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
                staged.append((tmp, path))
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
        except OSError as exc:
            for tmp, _ in staged:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            raise OutputPathError(
                f"cannot write {exc.filename or 'an output'}: {exc.strerror}"
            ) from None
        for tmp, path in staged:
            os.replace(tmp, path)
        return [path for _, path in staged]


def write_atomic(path: Path, data: bytes) -> None:
    """One file, written atomically."""
    outputs = Outputs()
    outputs.add(path, data)
    outputs.commit()
