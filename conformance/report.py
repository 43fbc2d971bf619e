"""Pytest plugin that records every conformance case × target and writes the report.

Outputs (after the session) a Markdown and a JSON report: one row per case, one column per
target, pass/fail/skip in each cell, per-target totals, and a last line exactly
``N passed, M failed`` (plus ``, K skipped`` when K > 0). The same summary is printed in
pytest's terminal summary, with the report's path.

Where: the directory given with ``--report-dir`` (``minijs conformance --report DIR``), else
``conformance/report/`` beside this file. A run of the local targets writes ``report.md`` and
``report.json`` there (the next such run replaces them). A run that checks a ``--url`` server
writes ``report-<host>-<port>-<UTC time>.md`` / ``.json``, created exclusively (``-2``,
``-3``, ... when that name is taken), so it never replaces another report.

Only items under the conformance directory that are parametrized with ``target`` are counted,
so running ``pytest tests conformance`` reports on the conformance cases alone.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CONFORMANCE_DIR = Path(__file__).resolve().parent
REPORT_DIR = CONFORMANCE_DIR / "report"

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass
class CaseResult:
    """Outcome of one case on one target."""

    case: str
    target: str
    outcome: str = PASSED
    message: str = ""
    duration: float = 0.0
    seen: bool = False  # any phase reported (an item never run is counted as failed)


@dataclass(eq=False)  # identity hash: pluggy keeps plugins in sets
class ConformanceReport:
    """Collects results and renders them."""

    config: pytest.Config
    targets: list[str]
    results: dict[str, CaseResult] = field(default_factory=dict)  # by nodeid
    started: float = field(default_factory=time.time)
    written: bool = False
    report_dir: Path = REPORT_DIR
    #: ``nats://host:port`` of the ``--url`` target, if the run checks one.
    url: str | None = None
    #: The Markdown report, once written (its JSON twin has the same stem).
    path: Path | None = None

    # ------------------------------------------------------------------ pytest hooks

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            key = case_key(item)
            if key is not None:
                self.results[item.nodeid] = CaseResult(case=key[0], target=key[1])

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = self.results.get(report.nodeid)
        if result is None:
            return
        result.seen = True
        result.duration += report.duration
        if report.failed:
            if result.outcome != FAILED:
                result.outcome = FAILED
                result.message = f"{report.when}: {crash_message(report)}"
        elif report.skipped and result.outcome == PASSED:
            result.outcome = SKIPPED
            result.message = skip_reason(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.option.collectonly or not self.results:
            return
        self.write()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.config.option.collectonly or not self.results:
            return
        if not self.written:
            self.write()
        tr = terminalreporter
        tr.section("conformance")
        for target, counts in self.totals().items():
            tr.write_line(f"{target}: {format_counts(counts)}")
        failures = [r for r in self.ordered() if r.outcome == FAILED]
        for r in failures:
            tr.write_line(f"FAILED {r.case}[{r.target}]: {r.message[:200]}")
        tr.write_line(f"report: {self.path}")
        tr.write_line(format_counts(self.overall()))

    # ------------------------------------------------------------------ aggregation

    def ordered(self) -> list[CaseResult]:
        for r in self.results.values():
            if not r.seen:
                r.outcome, r.message = FAILED, "not run (session interrupted?)"
        return list(self.results.values())

    def cases(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.results.values():
            seen.setdefault(r.case, None)
        return list(seen)

    def used_targets(self) -> list[str]:
        present = {r.target for r in self.results.values()}
        return [t for t in self.targets if t in present] + sorted(present - set(self.targets))

    def totals(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for target in self.used_targets():
            counts = {PASSED: 0, FAILED: 0, SKIPPED: 0}
            for r in self.ordered():
                if r.target == target:
                    counts[r.outcome] += 1
            out[target] = counts
        return out

    def by_area(self) -> dict[str, dict[str, dict[str, int]]]:
        """area -> target -> counts, areas in :data:`AREAS` order."""
        out: dict[str, dict[str, dict[str, int]]] = {name: {} for name, _ in AREAS}
        for r in self.ordered():
            per = out[area(r.case)].setdefault(r.target, {PASSED: 0, FAILED: 0, SKIPPED: 0})
            per[r.outcome] += 1
        return {name: per for name, per in out.items() if per}

    def overall(self) -> dict[str, int]:
        counts = {PASSED: 0, FAILED: 0, SKIPPED: 0}
        for r in self.ordered():
            counts[r.outcome] += 1
        return counts

    # ------------------------------------------------------------------ output

    def write(self) -> None:
        self.report_dir.mkdir(parents=True, exist_ok=True)
        results = self.ordered()
        targets = self.used_targets()
        grid: dict[str, dict[str, CaseResult]] = {}
        for r in results:
            grid.setdefault(r.case, {})[r.target] = r
        overall = self.overall()

        data = {
            "generated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "duration_s": round(time.time() - self.started, 3),
            "targets": targets,
            "cases": [
                {
                    "case": case,
                    "area": area(case),
                    "results": {
                        t: {
                            "outcome": grid[case][t].outcome,
                            "message": grid[case][t].message,
                            "duration_s": round(grid[case][t].duration, 3),
                        }
                        for t in targets
                        if t in grid[case]
                    },
                }
                for case in grid
            ],
            "totals": self.totals(),
            "overall": overall,
            "summary": format_counts(overall),
        }
        if self.url:
            data["url"] = self.url
        json_text = json.dumps(data, indent=2) + "\n"

        symbol = {PASSED: "pass", FAILED: "**FAIL**", SKIPPED: "skip"}
        lines = [
            "# Conformance report",
            "",
            f"Generated {data['generated']}, targets: {', '.join(targets)}"
            + (f" (url: {self.url})" if self.url else "") + ".",
            "",
            "| case | " + " | ".join(targets) + " |",
            "|---|" + "---|" * len(targets),
        ]
        for case, row in grid.items():
            if area(case) == "cluster":
                continue  # their own section below
            cells = [symbol[row[t].outcome] if t in row else "—" for t in targets]
            lines.append(f"| `{case}` | " + " | ".join(cells) + " |")
        lines += cluster_section(grid, targets, symbol)
        lines += ["", "## By area", ""]
        lines += ["| area | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
        for area_name, counts in self.by_area().items():
            cells = [format_counts(counts[t]) if t in counts else "—" for t in targets]
            lines.append(f"| {area_name} | " + " | ".join(cells) + " |")
        lines += ["", "## Totals", ""]
        lines += ["| target | passed | failed | skipped |", "|---|---|---|---|"]
        for target, counts in self.totals().items():
            lines.append(
                f"| {target} | {counts[PASSED]} | {counts[FAILED]} | {counts[SKIPPED]} |"
            )
        failures = [r for r in results if r.outcome == FAILED]
        if failures:
            lines += ["", "## Failures", ""]
            for r in failures:
                lines.append(f"- `{r.case}` on **{r.target}**: {one_line(r.message)}")
        skips = [r for r in results if r.outcome == SKIPPED]
        if skips:
            lines += ["", "## Skips", ""]
            for r in skips:
                lines.append(f"- `{r.case}` on **{r.target}**: {one_line(r.message)}")
        lines += ["", format_counts(overall), ""]
        self.path = self._save("\n".join(lines), json_text)
        self.written = True

    def _save(self, markdown: str, json_text: str) -> Path:
        """Write both files; a ``--url`` run under a name of its own, never over another."""
        if not self.url:
            (self.report_dir / "report.json").write_text(json_text)
            path = self.report_dir / "report.md"
            path.write_text(markdown)
            return path
        stem = url_report_stem(self.url, self.started)
        for n in range(1, 10_000):
            name = stem if n == 1 else f"{stem}-{n}"
            md, js = self.report_dir / f"{name}.md", self.report_dir / f"{name}.json"
            try:
                fd = os.open(md, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                continue
            if js.exists():  # a report of that name from elsewhere: keep both, take the next
                os.close(fd)
                os.unlink(md)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(markdown)
            with open(js, "x") as f:
                f.write(json_text)
            return md
        raise FileExistsError(f"no free report name for {stem} in {self.report_dir}")


# ---------------------------------------------------------------------- helpers


def cluster_section(grid: dict[str, dict[str, CaseResult]], targets: list[str],
                    symbol: dict[str, str]) -> list[str]:
    """The cluster cases (a cluster of each target: nats-server processes joined by routes,
    minijs's in-process cluster; core NATS over routes on both), with each one's time."""
    rows = {case: row for case, row in grid.items() if area(case) == "cluster"}
    if not rows:
        return []
    lines = ["", "## Cluster", "",
             "Cases run on a 3-node cluster of each target (nats-server: processes joined by "
             "routes, waiting in real time; minijs: `--cluster_size` on the virtual clock), "
             "with the time each took.", "",
             "| case | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
    totals = dict.fromkeys(targets, 0.0)
    for case, row in rows.items():
        cells = []
        for t in targets:
            if t not in row:
                cells.append("—")
                continue
            totals[t] += row[t].duration
            cells.append(f"{symbol[row[t].outcome]} ({row[t].duration:.1f} s)")
        lines.append(f"| `{case}` | " + " | ".join(cells) + " |")
    lines.append("| time | " + " | ".join(f"{totals[t]:.1f} s" for t in targets) + " |")
    return lines


#: Report areas, by the case's module name prefix (first match wins; "core" catches the rest).
AREAS: list[tuple[str, tuple[str, ...]]] = [
    ("cluster", ("test_cluster",)),
    ("KV", ("test_kv",)),
    ("object store", ("test_objstore",)),
    ("mirrors and sources", ("test_js_mirror",)),
    ("consumers", ("test_js_consume", "test_js_ack")),
    ("streams", ("test_js_stream", "test_js_publish", "test_js_direct", "test_js_msg",
                 "test_js_expiry", "test_js_transform", "test_js_natspy")),
    ("JetStream API", ("test_js_",)),
    ("second client (nats.js)", ("test_natsjs",)),
    ("core", ("",)),
]


def url_report_stem(url: str, started: float) -> str:
    """``report-<host>-<port>-<UTC time>`` for a ``--url`` run (characters a file name may
    not safely hold become ``_``)."""
    from urllib.parse import urlparse

    parsed = urlparse(url if "://" in url else f"nats://{url}")
    host = re.sub(r"[^A-Za-z0-9.-]", "_", parsed.hostname or "127.0.0.1")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    return f"report-{host}-{parsed.port or 4222}-{stamp}"


def area(case: str) -> str:
    module = case.split("::", 1)[0]
    for name, prefixes in AREAS:
        if module.startswith(prefixes):
            return name
    return "core"


def case_key(item: pytest.Item) -> tuple[str, str] | None:
    """(case name, target) for a conformance item, None for anything else."""
    callspec = getattr(item, "callspec", None)
    if callspec is None or "target" not in callspec.params:
        return None
    path = Path(str(item.path)).resolve()
    if CONFORMANCE_DIR not in path.parents:
        return None
    target = str(callspec.params["target"])
    rest = strip_target_id(callspec.id, target)
    name = getattr(item, "originalname", item.name)
    case = f"{path.stem}::{name}" + (f"[{rest}]" if rest else "")
    return case, target


def strip_target_id(callspec_id: str, target: str) -> str:
    """The parametrization id of an item without its target component."""
    if callspec_id == target:
        return ""
    if callspec_id.startswith(target + "-"):
        return callspec_id[len(target) + 1 :]
    if callspec_id.endswith("-" + target):
        return callspec_id[: -len(target) - 1]
    return callspec_id.replace(f"-{target}-", "-")


def crash_message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message)
    return str(report.longrepr).strip().splitlines()[-1] if report.longrepr else "failed"


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def one_line(text: str, limit: int = 500) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_counts(counts: dict[str, int]) -> str:
    """``N passed, M failed`` plus ``, K skipped`` when K > 0."""
    text = f"{counts[PASSED]} passed, {counts[FAILED]} failed"
    if counts[SKIPPED]:
        text += f", {counts[SKIPPED]} skipped"
    return text
