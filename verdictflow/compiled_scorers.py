"""The lexical scorers compiled to C with mypyc, used only where they match the sources.

Why: the lexical tier's scoring is a few hundred microseconds of pure-Python string and set
work an answer, spread over many small functions, with no single hot spot left to tune (issue
41, docs/benchmarks.md). mypyc, the mypy project's compiler for typed Python, turns modules that
pass ``mypy --strict`` into C extensions; compiled, the lexical tier follows a Faust forward
(measured: +12 % answers/s end to end, the same verdict bytes on 21,432 real verdicts).

What is compiled is :data:`COMPILED_MODULES`, nothing else: the scorers the lexical tier runs
and the tokenizers under them. The other scorers stay Python (the NLP tier gained nothing
compiled, and a float-typed table in ``quantities`` changed evidence compiled).

The compiled extensions are built by ``make setup`` (``scripts/build_compiled_scorers.py``)
into :data:`BUILD_DIR`, away from the sources, so a plain import never picks them up. This
module, run by ``verdictflow/__init__.py`` before any scorer is imported, puts a finder for them
at the head of ``sys.meta_path`` only when the build's manifest matches:

* the digest of every compiled module's source, as it is now: an edited ``.py`` runs as the
  edited Python, never as a stale extension;
* the running interpreter (the extension suffix, e.g. ``.cpython-311-x86_64-linux-gnu.so``);
* every extension file present.

All or none: compiled modules call one another directly, so a mix is never loaded. When the
check fails the scorers run as pure Python, with a warning that says why and how to rebuild;
when nothing was built, quietly. ``VERDICTFLOW_COMPILED=0`` runs pure Python regardless;
``VERDICTFLOW_COMPILED=require`` refuses to start without the compiled build (a benchmark, a
test of the build).

Verdicts do not record which of the two scored them: both give the same bytes (a test runs
real data through each and compares), so a worker compiled and ``verdictflow eval`` without
still agree byte for byte, and the environment digest stays the same.

mypyc carries its own versions of some ``str`` methods (``mypyc/primitives/str_ops.py``); of
those read in mypyc 2.4.1 (case, ``is*``, strip, split, find, replace) one differs from
CPython's: ``str.lower()`` maps each character alone and misses Unicode's
final-sigma rule ("ΟΔΟΣ" -> "οδοσ", CPython "οδος"), so for a day (2026-11-30, session 15 on) a
compiled worker's token sets differed from pure Python's on Greek capitals. The compiled
modules lowercase through ``text_normalise.lower`` (CPython's method, called as any callable);
a test holds their sources to it, and the bytes test includes such answers.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

logger = logging.getLogger(__name__)

#: The modules compiled, in dependency order. Each must pass mypy strict, must not define
#: pydantic models or Generic classes, and must never hold an int where it declares a float
#: (compiled, a float is a C double: ``1`` would become ``1.0`` in evidence).
COMPILED_MODULES = (
    "verdictflow.evaluators.tokenize",
    "verdictflow.evaluators.text_normalise",
    "verdictflow.evaluators.normalised_events",
    "verdictflow.evaluators.completeness",
    "verdictflow.evaluators.relevance",
    "verdictflow.evaluators.groundedness",
    "verdictflow.evaluators.consistency",
)

#: mypyc's shared library for the group (the modules' code; each module's own extension is a
#: small shim that imports it), named inside the package so it needs no top-level name.
SHARED_LIBRARY = "verdictflow.evaluators.lexical_scorers__mypyc"
GROUP_NAME = SHARED_LIBRARY.removesuffix("__mypyc")

PACKAGE_DIR = Path(__file__).resolve().parent
#: Where ``make setup`` puts the extensions and the manifest (not on any import path).
BUILD_DIR = PACKAGE_DIR / "_compiled"
MANIFEST_NAME = "manifest.json"
MANIFEST_FORMAT = "verdictflow-compiled-scorers/1"

ENV_SWITCH = "VERDICTFLOW_COMPILED"


def source_path(module: str, package_dir: Path | None = None) -> Path:
    """The ``.py`` file of one of the package's modules (in ``package_dir``: a checkout's
    ``verdictflow/``; by default this package's)."""
    parts = module.split(".")
    if parts[0] != "verdictflow":
        raise ValueError(f"not a verdictflow module: {module}")
    return (package_dir or PACKAGE_DIR).joinpath(*parts[1:]).with_suffix(".py")


def sources_digest(
    modules: Sequence[str] = COMPILED_MODULES, package_dir: Path | None = None
) -> str:
    """SHA-256 over each module's name and source bytes, in order."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(module.encode() + b"\0")
        digest.update(source_path(module, package_dir).read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


def extension_suffix() -> str:
    """The running interpreter's extension suffix (the build must be for this interpreter)."""
    return importlib.machinery.EXTENSION_SUFFIXES[0]


def extension_file(module: str) -> Path:
    """Where a module's extension lies in a build dir: its package path, this interpreter's
    suffix (``verdictflow/evaluators/tokenize.cpython-311-x86_64-linux-gnu.so``)."""
    return Path(*module.split(".")).with_suffix(extension_suffix())


@dataclass(frozen=True, slots=True)
class CompiledStatus:
    """Whether the compiled scorers are used, and why (for logs, ``make bench``, tests)."""

    active: bool
    reason: str
    #: module name -> extension file, for every compiled module and the shared library
    files: dict[str, Path]
    mypyc: str = ""
    #: False where nothing was built (a machine without a compiler): pure Python by design,
    #: logged at debug level; any other unusable build is a warning.
    built: bool = True

    def describe(self) -> str:
        if self.active:
            return f"compiled with mypyc {self.mypyc} ({len(COMPILED_MODULES)} modules)"
        return f"pure Python ({self.reason})"


def check_build(build_dir: Path = BUILD_DIR) -> CompiledStatus:
    """Read ``build_dir``'s manifest and say whether its extensions may be used here."""
    manifest_path = build_dir / MANIFEST_NAME
    if not manifest_path.is_file():
        return CompiledStatus(False, "not built (`make setup` builds it)", {}, built=False)
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("format") != MANIFEST_FORMAT:
            return CompiledStatus(False, f"unknown build format {manifest.get('format')!r}", {})
        files = {str(name): build_dir / str(rel) for name, rel in manifest["files"].items()}
        mypyc_version = str(manifest.get("mypyc", "?"))
        built_for = str(manifest["extension_suffix"])
        built_from = str(manifest["sources_digest"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return CompiledStatus(False, f"unreadable manifest {manifest_path}: {exc}", {})
    if built_for != extension_suffix():
        return CompiledStatus(
            False, f"built for {built_for}, this interpreter loads {extension_suffix()}", {}
        )
    expected = {*COMPILED_MODULES, SHARED_LIBRARY}
    if set(files) != expected:
        return CompiledStatus(False, "built for another set of modules", {})
    missing = sorted(name for name, path in files.items() if not path.is_file())
    if missing:
        return CompiledStatus(False, f"extension files missing: {', '.join(missing)}", {})
    try:
        current = sources_digest()
    except OSError as exc:
        return CompiledStatus(False, f"sources unreadable: {exc}", {})
    if current != built_from:
        return CompiledStatus(False, "stale: the sources changed since the build", {})
    return CompiledStatus(True, "", files, mypyc_version)


class _CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds exactly the compiled modules (and their shared library) in the build dir."""

    def __init__(self, files: dict[str, Path]) -> None:
        self._files = dict(files)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        file = self._files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


_status: CompiledStatus | None = None


def activate() -> CompiledStatus:
    """Install the finder when the build matches (once a process); the status either way.

    Must run before any of :data:`COMPILED_MODULES` is imported (``verdictflow/__init__.py``).
    """
    global _status
    if _status is not None:
        return _status
    switch = os.environ.get(ENV_SWITCH, "auto").strip().lower()
    if switch in {"0", "off", "false", "no"}:
        _status = CompiledStatus(False, f"{ENV_SWITCH}={switch}", {})
        return _status
    status = check_build()
    if status.active:
        already = sorted(m for m in COMPILED_MODULES if m in sys.modules)
        if already:  # imported before the package: never mix the two
            status = CompiledStatus(False, f"already imported as Python: {already[0]}", {})
        else:
            sys.meta_path.insert(0, _CompiledFinder(status.files))
    if not status.active:
        if switch == "require":
            raise ImportError(
                f"{ENV_SWITCH}=require but the compiled scorers are unusable: {status.reason}"
            )
        if not status.built:
            logger.debug("lexical scorers run as pure Python: %s", status.reason)
        else:
            logger.warning(
                "lexical scorers run as pure Python: %s; `make setup` rebuilds them",
                status.reason,
            )
    _status = status
    return status


def status() -> CompiledStatus:
    """The status :func:`activate` settled on (it runs on the package's import)."""
    return activate()
