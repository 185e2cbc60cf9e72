"""Every module imports on its own, and the layers hold.

Each module is imported first in a clean ``verdictflow`` namespace (the package's modules are
dropped from ``sys.modules`` between imports; third-party packages stay loaded, so the whole
package takes seconds, not one interpreter per module). An import cycle shows up as "partially
initialized module" for the module that enters it first, which is why each one gets its turn.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import orjson

PROBE = textwrap.dedent(
    """
    import importlib, pkgutil, sys, traceback
    import orjson
    import verdictflow

    walk = pkgutil.walk_packages(verdictflow.__path__, "verdictflow.")
    names = sorted(m.name for m in walk if not m.name.endswith("__main__"))  # runs the CLI
    report = {}
    for name in names:
        ours = [m for m in sys.modules if m == "verdictflow" or m.startswith("verdictflow.")]
        for loaded in ours:
            del sys.modules[loaded]
        try:
            importlib.import_module(name)
            error = None
        except Exception:
            error = traceback.format_exc(limit=3)
        report[name] = {
            "error": error,
            "cli": "verdictflow.cli" in sys.modules,
        }
    sys.stdout.write(orjson.dumps(report).decode())
    """
)

#: Modules of the offline jobs.
OFFLINE = (
    "verdictflow.scoring_jobs.batch.eval_answers",
    "verdictflow.scoring_jobs.batch.eval_summaries",
    "verdictflow.scoring_jobs.calibration.calibrate",
    "verdictflow.scoring_jobs.calibration.kinds",
    "verdictflow.scoring_jobs.retrieval_eval.rq_eval",
    "verdictflow.pipelines.answers",
    "verdictflow.pipelines.groups",
    "verdictflow.pipelines.summaries",
    "verdictflow.scoring_setup",
)


def test_every_module_imports_alone_and_nothing_below_the_cli_imports_it() -> None:
    # As pure Python: the probe imports each module again after dropping the package from
    # sys.modules, which a C extension does not survive (mypyc's shared library keeps the
    # modules it initialised); the compiled scorers' imports are tested on their own
    # (tests/test_compiled_scorers.py), and the layers are the same sources.
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, "VERDICTFLOW_COMPILED": "0"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = orjson.loads(proc.stdout)
    assert len(report) > 100, "the probe did not walk the package"
    failed = {name: r["error"] for name, r in report.items() if r["error"]}
    assert not failed, "\n".join(f"{name}:\n{error}" for name, error in failed.items())
    upward = [n for n, r in report.items() if r["cli"] and not n.startswith("verdictflow.cli")]
    assert not upward, f"modules below the command line that import it: {upward}"


def test_offline_jobs_do_not_import_faust() -> None:
    """Offline jobs run the agents' scoring code without a stream processor."""
    probe = f"import sys; import {', '.join(OFFLINE)}; print('faust' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "False", "an offline job imports Faust (an agent module?)"
