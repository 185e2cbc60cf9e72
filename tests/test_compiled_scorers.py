"""The lexical scorers compiled with mypyc (verdictflow/compiled_scorers.py): used only when
the build matches the sources, and giving the same bytes as pure Python on real answers."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT
from verdictflow import compiled_scorers as cs


def fake_build(tmp_path: Path, **changes: object) -> Path:
    """A build dir whose manifest matches the sources and this interpreter (empty files stand
    for the extensions: :func:`check_build` never loads them), then ``changes`` applied."""
    files = {}
    for name in (*cs.COMPILED_MODULES, cs.SHARED_LIBRARY):
        relative = cs.extension_file(name)
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).touch()
        files[name] = str(relative)
    manifest: dict[str, object] = {
        "format": cs.MANIFEST_FORMAT,
        "mypyc": "test",
        "extension_suffix": cs.extension_suffix(),
        "sources_digest": cs.sources_digest(),
        "files": files,
    }
    manifest.update(changes)
    (tmp_path / cs.MANIFEST_NAME).write_text(json.dumps(manifest))
    return tmp_path


def test_a_build_matching_sources_and_interpreter_is_used(tmp_path: Path) -> None:
    status = cs.check_build(fake_build(tmp_path))
    assert status.active, status.reason
    assert set(status.files) == {*cs.COMPILED_MODULES, cs.SHARED_LIBRARY}


def test_nothing_built_runs_pure_python(tmp_path: Path) -> None:
    status = cs.check_build(tmp_path)
    assert not status.active
    assert status.reason.startswith("not built")
    assert not status.built
    assert status.describe().startswith("pure Python")


def test_a_build_from_other_sources_is_stale(tmp_path: Path) -> None:
    status = cs.check_build(fake_build(tmp_path, sources_digest="0" * 64))
    assert not status.active
    assert status.reason.startswith("stale")


def test_one_edited_byte_in_any_source_reads_as_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = cs.sources_digest()
    for module in cs.COMPILED_MODULES:  # a copy of the package's compiled sources
        copy = tmp_path.joinpath(*module.split(".")[1:]).with_suffix(".py")
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(cs.source_path(module).read_bytes())
    monkeypatch.setattr(cs, "PACKAGE_DIR", tmp_path)
    assert cs.sources_digest() == built
    for module in cs.COMPILED_MODULES:
        path = cs.source_path(module)
        original = path.read_bytes()
        path.write_bytes(original.replace(b"\n", b"\n ", 1))
        assert cs.sources_digest() != built, module
        path.write_bytes(original)


def test_a_build_for_another_interpreter_is_not_loaded(tmp_path: Path) -> None:
    status = cs.check_build(fake_build(tmp_path, extension_suffix=".cpython-39-x86_64.so"))
    assert not status.active
    assert "built for .cpython-39" in status.reason


def test_a_build_of_other_modules_or_missing_files_is_not_loaded(tmp_path: Path) -> None:
    fewer = cs.check_build(fake_build(tmp_path / "a", files={cs.SHARED_LIBRARY: "x.so"}))
    assert not fewer.active
    assert "another set of modules" in fewer.reason
    build = fake_build(tmp_path / "b")
    next(build.rglob(f"tokenize{cs.extension_suffix()}")).unlink()
    missing = cs.check_build(build)
    assert not missing.active
    assert "missing: verdictflow.evaluators.tokenize" in missing.reason


def test_an_unreadable_manifest_is_not_loaded(tmp_path: Path) -> None:
    (tmp_path / cs.MANIFEST_NAME).write_text("{not json")
    status = cs.check_build(tmp_path)
    assert not status.active
    assert "unreadable manifest" in status.reason


def test_no_build_is_a_debug_line_and_an_unusable_one_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A machine without a compiler runs pure Python by design (debug); a stale or broken
    build is something to fix (a warning naming `make setup`)."""
    monkeypatch.delenv(cs.ENV_SWITCH, raising=False)
    for status, level in (
        (cs.CompiledStatus(False, "not built (x)", {}, built=False), logging.DEBUG),
        (cs.CompiledStatus(False, "stale: x", {}), logging.WARNING),
    ):
        monkeypatch.setattr(cs, "_status", None)
        monkeypatch.setattr(cs, "check_build", lambda status=status: status)
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger=cs.__name__):
            assert cs.activate() is status
        (record,) = [r for r in caplog.records if r.name == cs.__name__]
        assert record.levelno == level
        assert status.reason in record.getMessage()


def test_require_refuses_to_start_without_a_usable_build() -> None:
    env = {**os.environ, cs.ENV_SWITCH: "require"}
    probe = (
        "import verdictflow.compiled_scorers as c, unittest.mock as m\n"
        "c._status = None\n"
        "with m.patch.object(c, 'check_build', lambda: c.CompiledStatus(False, 'stale: x', {})):\n"
        "    c.activate()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if cs.check_build().active:
        # the package's own import passed; the patched second activation must refuse
        assert done.returncode != 0
        assert "VERDICTFLOW_COMPILED=require" in done.stderr
        assert "stale: x" in done.stderr
    else:  # no build here: the package's import itself refuses
        assert done.returncode != 0
        assert "VERDICTFLOW_COMPILED=require" in done.stderr


def scorer_bytes(compiled: bool) -> subprocess.Popen[str]:
    env = {**os.environ, cs.ENV_SWITCH: "require" if compiled else "0"}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.scorer_bytes"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.skipif(
    not cs.check_build().active, reason=f"compiled scorers: {cs.check_build().reason}"
)
def test_compiled_and_pure_python_give_the_same_bytes_on_real_answers() -> None:
    """HaluEval, BEGIN and LLM-AggreFact answers and generated traffic (variants, groups,
    malformed lines) through the lexical tier, and the first 48 through the NLP tier (which
    uses the compiled tokenizers), each process with one of the two builds."""
    runs = {compiled: scorer_bytes(compiled) for compiled in (True, False)}
    results = {}
    for compiled, process in runs.items():
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err[-2000:]
        results[compiled] = json.loads(out.strip().splitlines()[-1])
    native, pure = results[True], results[False]
    suffix = cs.extension_suffix()
    assert all(str(f).endswith(suffix) for f in native["files"].values()), native["files"]
    assert all(str(f).endswith(".py") for f in pure["files"].values()), pure["files"]
    assert native["lexical_outputs"] == pure["lexical_outputs"] > 5000
    assert native["nlp_outputs"] == pure["nlp_outputs"] > 48
    assert native["lexical"] == pure["lexical"]
    assert native["nlp"] == pure["nlp"]


def test_compiled_modules_lowercase_only_through_cpythons_str_lower() -> None:
    """Compiled, ``text.lower()`` is mypyc's own lowercasing, which misses Unicode's
    final-sigma rule ("ΟΔΟΣ": "οδοσ" against CPython's "οδος"; the bytes test above caught it
    on its edge answers): the compiled modules lowercase through ``text_normalise.lower``,
    which calls CPython's. Checked on their sources, so a new ``.lower()`` is found before a
    text that needs it does."""
    import ast

    direct = []
    for module in cs.COMPILED_MODULES:
        path = cs.source_path(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"lower", "upper"}
                and not node.args  # ``text.lower()``, not ``text_normalise.lower(text)``
            ):
                direct.append(f"{path.name}:{node.lineno}")
    assert direct == []
    from verdictflow.evaluators.text_normalise import lower

    assert lower("Ο ΣΊΣΥΦΟΣ, ΟΔΟΣ.") == "ο σίσυφος, οδος." == "Ο ΣΊΣΥΦΟΣ, ΟΔΟΣ.".lower()
