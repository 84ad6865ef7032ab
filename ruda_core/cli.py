"""The ``ruda`` command: ``ruda devices [--json]``, ``ruda plugins [--json]`` and
``ruda conformance [--device D ...] [--report out.json|out.md] [-- pytest args]``.

``devices`` prints a tree per backend: each device with its name, the runtime it comes from,
memory and a properties summary; every device that failed the probe (a tiny kernel built and
run on it) as *unusable* with the driver's reason; and the reason for every unavailable
backend. ``--json`` prints the same facts as one JSON document for scripts; ``--reprobe``
probes every device again instead of trusting stored verdicts. The command exits 0 even when
some backends or devices are unavailable.

``conformance`` runs the backend conformance suite (``ruda_core.testing``) through pytest on the
given devices (default: every device), prints a summary per device and writes the test-by-device
matrix as JSON or Markdown; it exits with pytest's status. It needs pytest and Hypothesis
(``pip install 'ruda[test]'``), imported only by this subcommand.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__, plugins

__all__ = ["main"]


def _device_facts(status: plugins.BackendStatus) -> list[dict[str, Any]]:
    facts = []
    for device in status.devices:
        entry: dict[str, Any] = {"device": str(device)}
        try:
            client = plugins.client(device)
            props = client.properties()
            entry.update(
                status="available",
                name=props.name,
                vendor=props.vendor,
                memory_nbytes=props.memory_nbytes,
                compute_units=props.compute_units,
                max_units_per_ruda=props.max_units_per_ruda,
                max_shared_memory_nbytes=props.max_shared_memory_nbytes,
                plane_dim=props.plane_dim,
                features=sorted(f.value for f in client.features().features),
                elems=sorted(e.value for e in client.features().elems),
                summary=props.summary(),
                extra=dict(props.extra),
            )
        except Exception as exc:  # one device that cannot be opened must not hide the others
            entry.update(status="unusable", reason=f"{type(exc).__name__}: {exc}")
        facts.append(entry)
    for unusable in status.unusable:
        facts.append(
            {"device": str(unusable.device), "status": "unusable", "reason": unusable.reason}
        )
    return sorted(facts, key=lambda f: _device_order(f["device"]))


def _device_order(name: str) -> tuple[str, int]:
    head, _, index = name.partition(":")
    return head, int(index) if index.isdigit() else 0


def _backend_facts() -> list[dict[str, Any]]:
    return [
        {
            "backend": s.name,
            "version": s.version,
            "status": s.status.value,
            "reason": s.reason,
            "devices": _device_facts(s),
        }
        for s in plugins.backends()
    ]


def _print_devices(facts: list[dict[str, Any]]) -> None:
    print(f"ruda {__version__}")
    for backend in facts:
        head = f"{backend['backend']} {backend['version']}".strip()
        reason = f": {backend['reason']}" if backend["reason"] else ""
        print(f"{head} — {backend['status']}{reason}")
        devices = backend["devices"]
        for k, d in enumerate(devices):
            branch = "└──" if k == len(devices) - 1 else "├──"
            if d["status"] == "unusable":
                detail = f"unusable: {d['reason']}"
            else:
                runtime = dict(d["extra"]).get("runtime")
                source = f" [{runtime}]" if runtime else ""
                detail = f"{d['name']}{source} — {d['summary']}"
            print(f"  {branch} {d['device']}: {detail}")


def _plugin_facts() -> list[dict[str, Any]]:
    return [
        {
            "backend": s.name,
            "version": s.version,
            "status": s.status.value,
            "reason": s.reason,
            "devices": len(s.devices),
            "unusable": {str(u.device): u.reason for u in s.unusable},
            "distribution": s.distribution,
            "entry_point": s.entry_point,
            "runtime": f"{s.runtime.__module__}.{s.runtime.__qualname__}" if s.runtime else "",
        }
        for s in plugins.backends()
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ruda", description="ruda: portable GPU compute")
    parser.add_argument("--version", action="version", version=f"ruda {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    devices = sub.add_parser("devices", help="list every device of every installed backend")
    devices.add_argument("--json", action="store_true", help="print JSON for scripts")
    devices.add_argument(
        "--reprobe", action="store_true", help="probe every device again (forget stored verdicts)"
    )
    plugs = sub.add_parser("plugins", help="list driver plugins and their status")
    plugs.add_argument("--json", action="store_true", help="print JSON for scripts")
    conf = sub.add_parser(
        "conformance",
        help="run the backend conformance suite",
        description="Run the conformance suite on devices; arguments after -- go to pytest.",
    )
    conf.add_argument(
        "--device", action="append", default=[], metavar="D", help="a device to test (repeatable)"
    )
    conf.add_argument(
        "--report", type=Path, metavar="PATH", help="write the matrix to PATH (.json or .md)"
    )
    conf.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then pytest arguments")
    args = parser.parse_args(argv)

    if args.command == "conformance":
        return _conformance(args.device, args.report, args.pytest_args)

    if args.command == "devices":
        if args.reprobe:
            plugins.reload(reprobe=True)
        facts = _backend_facts()
        if args.json:
            json.dump({"ruda": __version__, "backends": facts}, sys.stdout, indent=2)
            print()
        else:
            _print_devices(facts)
    elif args.command == "plugins":
        rows = _plugin_facts()
        if args.json:
            json.dump(rows, sys.stdout, indent=2)
            print()
        else:
            for r in rows:
                reason = f" ({r['reason']})" if r["reason"] else ""
                count = f"{r['devices']} usable, {len(r['unusable'])} unusable"
                print(f"{r['backend']:<8} {r['status']:<14} {count:<22} {r['runtime']}{reason}")
                for device, why in r["unusable"].items():
                    print(f"{'':<8} {device}: unusable: {why}")
    return 0


def _conformance(devices: list[str], report: Path | None, extra: list[str]) -> int:
    try:
        from .testing.report import run_conformance
    except ModuleNotFoundError as exc:
        print(
            f"ruda conformance needs pytest and hypothesis ({exc}); install them with "
            "pip install 'ruda[test]'",
            file=sys.stderr,
        )
        return 2
    return run_conformance(devices, report, extra[1:] if extra[:1] == ["--"] else extra)


if __name__ == "__main__":
    raise SystemExit(main())
