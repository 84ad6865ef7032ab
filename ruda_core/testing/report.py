"""The conformance matrix: test-by-device -> pass / fail / xfail / unsupported / skip.

:class:`ResultCollector` is a small pytest plugin that records each test's outcome per device
under its conformance name; :class:`Matrix` prints a summary and writes the matrix as JSON or
Markdown. :func:`run_conformance` is what ``ruda conformance`` runs: the suite through
``pytest.main`` with the conformance plugin and the collector. Outcomes:

* ``pass``; ``fail`` (a failure or error in any phase, or a strict xfail that passed);
* ``xfail``: a failure the backend declared with a reason (``ruda_conformance_xfails``);
* ``unsupported``: skipped because the device lacks a feature or element type;
* ``skip``: skipped for any other reason (the device could not be opened, say).

Tests that do not run per device (the guard tests) are listed under the device ``any``. Each
report names its cell (:data:`~.overrides.MATRIX_PROPERTY`, set by the conformance plugin where
the test is collected), so the matrix fills under ``pytest -n`` as it does in one process.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .. import __version__
from .markers import UNSUPPORTED
from .overrides import MATRIX_PROPERTY, node_cell
from .selection import DeviceSelection, Unavailable, parse_names

__all__ = ["OUTCOMES", "Matrix", "ResultCollector", "run_conformance"]

#: Every outcome, worst first.
OUTCOMES = ("fail", "xfail", "unsupported", "skip", "pass")


@dataclass(frozen=True, slots=True)
class Cell:
    outcome: str
    reason: str = ""


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def _classify(report: pytest.TestReport) -> Cell | None:
    """The outcome one phase report implies (None: nothing to record)."""
    if hasattr(report, "wasxfail"):
        if report.skipped:
            return Cell("xfail", str(report.wasxfail))
        if report.failed:
            return Cell("fail", f"passed, but declared an expected failure: {report.wasxfail}")
    if report.failed:
        return Cell(
            "fail", report.longreprtext.strip().splitlines()[-1] if report.longreprtext else ""
        )
    if report.skipped:
        reason = _skip_reason(report)
        return Cell("unsupported" if reason.startswith(UNSUPPORTED) else "skip", reason)
    if report.when == "call":
        return Cell("pass")
    return None


@dataclass(slots=True)
class Matrix:
    """Outcomes by conformance name and device."""

    devices: list[str] = field(default_factory=list)
    cells: dict[str, dict[str, Cell]] = field(default_factory=dict)

    def record(self, test: str, device: str, cell: Cell) -> None:
        if device not in self.devices:
            self.devices.append(device)
        row = self.cells.setdefault(test, {})
        old = row.get(device)
        if old is None or OUTCOMES.index(cell.outcome) < OUTCOMES.index(old.outcome):
            row[device] = cell

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts of each outcome per device."""
        counts = {d: dict.fromkeys(OUTCOMES, 0) for d in self.devices}
        for row in self.cells.values():
            for device, cell in row.items():
                counts[device][cell.outcome] += 1
        return counts

    def summary_text(self) -> str:
        lines = ["ruda conformance:"]
        for device, counts in self.summary().items():
            parts = ", ".join(f"{counts[o]} {o}" for o in reversed(OUTCOMES) if counts[o])
            lines.append(f"  {device}: {parts or 'no tests'}")
        return "\n".join(lines)

    def to_json(self) -> str:
        results = [
            {"test": test, "device": device, "outcome": cell.outcome, "reason": cell.reason}
            for test, row in sorted(self.cells.items())
            for device, cell in row.items()
        ]
        return json.dumps(
            {
                "ruda": __version__,
                "devices": self.devices,
                "summary": self.summary(),
                "matrix": {
                    test: {d: c.outcome for d, c in row.items()}
                    for test, row in sorted(self.cells.items())
                },
                "results": results,
            },
            indent=2,
        )

    def to_markdown(self) -> str:
        head = f"| test | {' | '.join(self.devices)} |"
        lines = [
            f"# ruda {__version__} conformance",
            "",
            "| device | " + " | ".join(OUTCOMES) + " |",
            "|---" * (len(OUTCOMES) + 1) + "|",
        ]
        for device, counts in self.summary().items():
            lines.append(f"| {device} | " + " | ".join(str(counts[o]) for o in OUTCOMES) + " |")
        lines += ["", head, "|---" * (len(self.devices) + 1) + "|"]
        for test, row in sorted(self.cells.items()):
            cells = [row[d].outcome if d in row else "" for d in self.devices]
            lines.append(f"| `{test}` | " + " | ".join(cells) + " |")
        notes = [
            f"- `{test}` on {device}: **{cell.outcome}**: {cell.reason}"
            for test, row in sorted(self.cells.items())
            for device, cell in row.items()
            if cell.outcome != "pass" and cell.reason
        ]
        if notes:
            lines += ["", "## Reasons", "", *notes]
        return "\n".join(lines) + "\n"

    def write(self, path: Path) -> None:
        """Write the matrix as Markdown (``.md``) or JSON (anything else)."""
        text = self.to_markdown() if path.suffix.lower() in (".md", ".markdown") else self.to_json()
        path.write_text(text, encoding="utf-8")


class ResultCollector:
    """A pytest plugin filling a :class:`Matrix` as tests report; a failure reported without
    its cell (pytest-xdist's report of a test whose worker died) is placed by its node id among
    ``devices``."""

    def __init__(self, devices: Sequence[str] = ()) -> None:
        self.matrix = Matrix()
        self.devices = list(devices)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        named = dict(report.user_properties).get(MATRIX_PROPERTY)
        if named is None and report.failed:
            named = node_cell(report.nodeid, self.devices)
        cell = _classify(report)
        if isinstance(named, tuple | list) and cell is not None:  # a list from a worker
            test, device = named
            self.matrix.record(test, device, cell)


def _unwritable(report: Path) -> str | None:
    """Why the matrix could not be written to ``report`` at the end of a run, or None: its
    folder is tried as the user can use it, and the file opened for appending (and removed
    again where this made it), which a folder or a read-only file refuses."""
    folder = report.resolve().parent
    if not (folder.is_dir() and os.access(folder, os.W_OK)):
        return f"{folder} is not a folder this user can write"
    existed = report.exists()
    try:
        with report.open("a"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    if not existed:
        report.unlink()
    return None


def run_conformance(
    devices: Sequence[str], report: Path | None = None, pytest_args: Sequence[str] = ()
) -> int:
    """Run the conformance suite on ``devices`` (empty: the plugin's default), print a summary,
    write the matrix to ``report`` if given, and return pytest's exit code.

    A named device that cannot be opened (an unknown backend, an index beyond its devices, a
    driver that fails), or a report whose folder cannot be written, is refused before pytest
    runs: its reason goes to stderr and the exit code is pytest's usage error, never the success
    of a run that skipped everything or a run whose matrix is lost at its end.
    """
    unwritable = None if report is None else _unwritable(report)
    if unwritable is not None:
        print(f"ruda conformance: cannot write the report {report}: {unwritable}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    unusable = _unusable(devices)
    if unusable:
        for outcome in unusable:
            print(f"ruda conformance: {outcome.message()}", file=sys.stderr)
        print("run `ruda devices` to list the devices that can be tested", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    collector = ResultCollector(DeviceSelection.from_options(devices).names)
    args = ["-p", "ruda_core.testing.plugin", "--pyargs", "ruda_core.testing.conformance"]
    args += [f"--ruda-device={d}" for d in devices]
    code = pytest.main([*args, *pytest_args], plugins=[collector])
    if code == pytest.ExitCode.USAGE_ERROR:  # pytest refused its arguments: nothing ran
        return int(code)
    print(collector.matrix.summary_text())
    if report is not None:
        try:
            collector.matrix.write(report)
        except OSError as exc:  # the folder changed during the run, or the disk is full
            print(f"ruda conformance: cannot write the report {report}: {exc}", file=sys.stderr)
            return int(code) or 1
        print(f"matrix written to {report}")
    return int(code)


def _unusable(devices: Sequence[str]) -> list[Unavailable]:
    """The devices named in ``devices`` that cannot be opened."""
    if not parse_names(devices):
        return []
    selection = DeviceSelection.from_options(devices)
    outcomes = [selection.open(name) for name in selection.names]
    return [o for o in outcomes if isinstance(o, Unavailable)]
