"""Compile the lexical scorers with mypyc (``make setup`` runs this; see
``verdictflow/compiled_scorers.py`` for why and for how they are loaded).

    python scripts/build_compiled_scorers.py [--force] [--strict]

Idempotent: when the build in ``verdictflow/_compiled/`` matches the sources and this
interpreter it says so and returns at once. Without a C compiler or Python's headers it says
what is missing and exits 0 (the scorers then run as pure Python, with the same verdicts);
``--strict`` (or ``VERDICTFLOW_COMPILED_STRICT=1``, as CI sets) makes that, and a failed
build, an error. The new build is put in place only
once complete, so a half-built one is never loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import sysconfig
import time
from pathlib import Path

# The package is imported for the module list and the checks; it must not load a build
# this script is about to replace (nor warn that it is stale).
os.environ["VERDICTFLOW_COMPILED"] = "0"

from verdictflow import compiled_scorers as cs

#: The checkout this script is in: its sources are compiled (mypy does not analyse files
#: inside site-packages), its ``build/`` holds the generated C. The extensions go to the
#: package that imports, which is this checkout's in an editable install and an installed
#: copy of the same sources elsewhere (the Docker image's virtual environment).
CHECKOUT = Path(__file__).resolve().parent.parent
WORK_DIR = CHECKOUT / "build" / "compiled_scorers"


def missing_prerequisites() -> list[str]:
    """What a build needs and this machine lacks (empty when it can build)."""
    missing = []
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        missing.append(f"a C compiler ({compiler}; Debian: apt-get install gcc)")
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        missing.append(f"Python's headers ({headers}; Debian: apt-get install python3-dev)")
    for module in ("mypyc", "setuptools"):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"the {module} package (pip install -e '.[dev]')")
    return missing


def build(staging: Path) -> None:
    """Compile into ``staging``, with the manifest naming each module's extension file."""
    from mypy.version import __version__ as mypy_version
    from mypyc.build import mypycify
    from setuptools import Distribution

    digest = cs.sources_digest()  # read before compiling: an edit meanwhile reads as stale
    sources = CHECKOUT / "verdictflow"
    if cs.sources_digest(package_dir=sources) != digest:
        raise RuntimeError(
            f"the sources in {sources} differ from the installed package's in "
            f"{cs.PACKAGE_DIR}: install this checkout first"
        )
    paths = [str(cs.source_path(m, sources)) for m in cs.COMPILED_MODULES]
    # mypyc notes what it compiles differently ("Treating generator comprehension as list")
    # on stdout: kept out of `make setup`'s output unless the build fails.
    notes = io.StringIO()
    try:
        with contextlib.redirect_stdout(notes):
            extensions = mypycify(
                # a cache of its own: `make test` runs this beside the lint's mypy
                ["--cache-dir", str(WORK_DIR / "mypy_cache"), *paths],
                opt_level="3",
                group_name=cs.GROUP_NAME,
                target_dir=str(WORK_DIR / "c"),
            )
    except BaseException:
        print(notes.getvalue(), end="")
        raise
    distribution = Distribution({"name": "verdictflow-compiled-scorers", "ext_modules": extensions})
    command = distribution.get_command_obj("build_ext")
    command.build_lib = str(staging)  # type: ignore[attr-defined]
    command.build_temp = str(WORK_DIR / "temp")  # type: ignore[attr-defined]
    command.parallel = os.cpu_count() or 1  # type: ignore[attr-defined]
    distribution.run_command("build_ext")
    files = {}
    for name in (*cs.COMPILED_MODULES, cs.SHARED_LIBRARY):
        relative = cs.extension_file(name)
        if not (staging / relative).is_file():
            raise RuntimeError(f"mypyc built no {relative}")
        files[name] = str(relative)
    manifest = {
        "format": cs.MANIFEST_FORMAT,
        "mypyc": mypy_version,
        "extension_suffix": cs.extension_suffix(),
        "sources_digest": digest,
        "files": files,
    }
    (staging / cs.MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when up to date")
    parser.add_argument("--strict", action="store_true", help="fail when it cannot build")
    args = parser.parse_args()
    strict = args.strict or os.environ.get("VERDICTFLOW_COMPILED_STRICT") == "1"
    current = cs.check_build()
    if current.active and not args.force:
        print(f"compiled scorers: up to date ({current.describe()})")
        return 0
    missing = missing_prerequisites()
    if missing:
        print(f"compiled scorers: not built, missing {'; '.join(missing)}.", file=sys.stderr)
        print("The lexical scorers run as pure Python (same verdicts, slower).", file=sys.stderr)
        return 1 if strict else 0
    why = "rebuilding (--force)" if current.active else current.reason
    print(f"compiled scorers: {why}; compiling {len(cs.COMPILED_MODULES)} modules")
    started = time.perf_counter()
    staging = cs.BUILD_DIR.with_name(cs.BUILD_DIR.name + ".new")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        build(staging)
    except Exception as exc:
        shutil.rmtree(staging, ignore_errors=True)
        print(f"compiled scorers: build failed: {exc}", file=sys.stderr)
        print("The lexical scorers run as pure Python (same verdicts, slower).", file=sys.stderr)
        return 1 if strict else 0
    old = cs.BUILD_DIR.with_name(cs.BUILD_DIR.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if cs.BUILD_DIR.exists():
        cs.BUILD_DIR.rename(old)
    staging.rename(cs.BUILD_DIR)
    shutil.rmtree(old, ignore_errors=True)
    result = cs.check_build()
    if not result.active:
        print(f"compiled scorers: built but unusable: {result.reason}", file=sys.stderr)
        return 1
    print(f"compiled scorers: built in {time.perf_counter() - started:.0f} s ({cs.BUILD_DIR})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
