"""``make audit``: pip-audit over the installed dependencies, failing closed.

pip-audit reports "No known vulnerabilities found" even when it could audit nothing (it skips
every package whose vulnerability data it cannot fetch). Here, a skipped dependency is an
error with a clear message: an unreachable vulnerability service must not pass as a clean audit.
Advisories we accept are listed, each with its reason, in ``deploy/audit-ignore.txt``.

Usage: python .ci/audit.py [--from-json REPORT.json]   (the option is for tests)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

IGNORE_FILE = Path(__file__).resolve().parent.parent / "deploy" / "audit-ignore.txt"
OWN_PACKAGES = {"verdictflow"}


def ignored(path: Path = IGNORE_FILE) -> dict[str, str]:
    """Advisory id -> reason, from ``ID  reason`` lines (``#`` comments; a reason is required)."""
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        vuln_id, _, reason = line.partition(" ")
        if not reason.strip():
            raise SystemExit(f"{path}:{n}: {vuln_id} needs a reason")
        out[vuln_id] = reason.strip()
    return out


def judge(report: dict, accepted: dict[str, str]) -> list[str]:
    """Problems in a pip-audit JSON report; empty when the audit is clean and complete."""
    problems = []
    for dep in report.get("dependencies", []):
        name = dep["name"]
        if "skip_reason" in dep:
            if name.lower() not in OWN_PACKAGES:
                problems.append(f"not audited: {name}: {dep['skip_reason']}")
            continue
        for vuln in dep.get("vulns", []):
            ids = {vuln["id"], *vuln.get("aliases", [])}
            if not ids & accepted.keys():
                fixes = ", ".join(vuln.get("fix_versions", [])) or "no fix yet"
                problems.append(f"{name} {dep['version']}: {vuln['id']} (fixed in {fixes})")
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["--from-json"]:
        report = json.loads(Path(argv[1]).read_text())
    else:
        run = subprocess.run(
            [sys.executable, "-m", "pip_audit", "--local", "--skip-editable", "-f", "json",
             "--progress-spinner", "off"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if not run.stdout.strip():
            print(f"audit: pip-audit failed:\n{run.stderr[-2000:]}", file=sys.stderr)
            return 2
        report = json.loads(run.stdout)
    problems = judge(report, ignored())
    skipped = sum(p.startswith("not audited") for p in problems)
    if skipped:
        print(
            f"audit: FAILED: {skipped} dependencies could not be audited: the vulnerability "
            "service (PyPI's per-release JSON API) is unreachable from this machine. "
            "This is not a clean audit.",
            file=sys.stderr,
        )
    for problem in problems:
        print(f"audit: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"audit: {len(report.get('dependencies', []))} dependencies, no known vulnerabilities")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
