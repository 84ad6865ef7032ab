"""The ``ruda`` command: ``ruda devices [--json]``, ``ruda plugins [--json]``,
``ruda cache [list|clear|path]`` and
``ruda conformance [--device D ...] [--report out.json|out.md] [-- pytest args]``.

``devices`` prints a tree per backend: each device with its name, the runtime it comes from,
memory and a properties summary; every device that failed the probe (a tiny kernel built and
run on it) as *unusable* with the driver's reason; and the reason for every unavailable
backend. ``--json`` prints the same facts as one JSON document for scripts; ``--reprobe``
probes every device again instead of trusting stored verdicts. The command exits 0 even when
some backends or devices are unavailable.

``cache`` lists the persistent caches (compiled kernels, tuning results, probe verdicts) by
kind, driver and device with their sizes and folders (``--entries``: every entry; ``--json``),
``cache clear`` removes all of them or those that ``--kind``, ``--device`` and ``--driver``
select (safe while other processes use them), and ``cache path`` prints where they are.

``conformance`` runs the backend conformance suite (``ruda_core.testing``) through pytest on the
given devices (default: every device), prints a summary per device and writes the test-by-device
matrix as JSON or Markdown; it exits with pytest's status. It needs pytest and Hypothesis
(``pip install 'ruda[test]'``), imported only by this subcommand.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import __version__, plugins
from .errors import PluginError, SettingError
from .runtime.cache import CacheKind, cache_root, max_nbytes
from .runtime.cache_inventory import CacheEntry, clear, list_entries
from .runtime.nbytes import format_nbytes

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
            {
                "device": str(unusable.device),
                "status": "unusable",
                "reason": unusable.reason,
                "identity": unusable.identity,
            }
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
            last = k == len(devices) - 1
            branch = "└──" if last else "├──"
            if d["status"] == "unusable":
                detail = f"unusable: {d['reason']}"
            else:
                runtime = dict(d["extra"]).get("runtime")
                source = f" [{runtime}]" if runtime else ""
                detail = f"{d['name']}{source} — {d['summary']}"
            print(f"  {branch} {d['device']}: {detail}")
            if d.get("identity"):  # which driver stack an unusable device is
                print(f"  {'   ' if last else '│  '}   {d['identity']}")


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


def _entry_facts(entry: CacheEntry) -> dict[str, Any]:
    origin = entry.origin
    return {
        "kind": entry.kind.value,
        "driver": origin.driver if origin else None,
        "device": origin.device if origin else None,
        "label": origin.label if origin else None,
        "nbytes": entry.nbytes,
        "used_at": entry.used_at,
        "path": str(entry.path),
    }


def _count(entries: Sequence[CacheEntry]) -> str:
    total = format_nbytes(sum(e.nbytes for e in entries))
    return f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'} ({total})"


def _print_cache(cap: int, kinds: list[CacheKind], entries: list[CacheEntry], each: bool) -> None:
    limit = f"capped at {format_nbytes(cap)}" if cap else "not capped"
    print(f"ruda caches in {cache_root()} ({limit}; RUDA_CACHE_MAX_BYTES)")
    for kind in kinds:
        mine = [e for e in entries if e.kind is kind]
        folder = cache_root() / kind.folder_name
        print(f"{kind.value:<8} {folder}: {_count(mine) if mine else 'empty'}")
        groups = itertools.groupby(
            mine, lambda e: (e.origin.driver, e.origin.device) if e.origin else None
        )
        for origin, members in groups:
            group = list(members)
            driver, device = origin or ("?", "(another format, or unreadable)")
            print(f"  {driver:<8} {device:<12} {_count(group)}")
            for e in group if each else ():
                used = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.used_at))
                label = e.origin.label if e.origin else ""
                print(
                    f"    {format_nbytes(e.nbytes):>10}  used {used}  {label}  {e.path.name[:12]}"
                )


def _cache(args: argparse.Namespace) -> int:
    kinds = list(dict.fromkeys(CacheKind(k) for k in args.kind)) if args.kind else list(CacheKind)
    if args.action == "path":
        for folder in (
            [cache_root() / k.folder_name for k in kinds] if args.kind else [cache_root()]
        ):
            print(folder)
        return 0
    try:
        cap = max_nbytes()
        if args.action == "clear":
            removed = clear(kinds, device=args.device, driver=args.driver)
        else:
            entries = list_entries(kinds, device=args.device, driver=args.driver)
    except OSError as exc:  # an unremovable file
        print(f"ruda cache {args.action}: {exc}", file=sys.stderr)
        return 1
    if (args.device or args.driver) and not (removed if args.action == "clear" else entries):
        _say_what_is_cached(kinds, args.device, args.driver)
    if args.action == "clear":
        print(f"removed {_count(removed)} from {cache_root()}")
    elif args.json:
        facts = {
            "root": str(cache_root()),
            "max_nbytes": cap,
            "folders": {k.value: str(cache_root() / k.folder_name) for k in kinds},
            "entries": [_entry_facts(e) for e in entries],
        }
        json.dump(facts, sys.stdout, indent=2)
        print()
    else:
        _print_cache(cap, kinds, entries, args.entries)
    return 0


def _say_what_is_cached(kinds: list[CacheKind], device: str | None, driver: str | None) -> None:
    """On stderr, when a selection matched nothing: the devices (or drivers) the cache holds
    entries for, so that a misspelt name shows."""
    wanted = " and ".join(
        f"{what} {name}" for what, name in (("device", device), ("driver", driver)) if name
    )
    origins = [e.origin for e in list_entries(kinds) if e.origin]
    held = sorted({o.device if device else o.driver for o in origins})
    print(
        f"ruda cache: no entry was made for {wanted}; "
        f"entries are for {', '.join(held) if held else 'no device'}",
        file=sys.stderr,
    )


def _add_cache_parser(sub: Any) -> None:
    kinds = [k.value for k in CacheKind]
    cache = sub.add_parser(
        "cache",
        help="list, clear or locate the kernel, tuning and probe caches",
        description="List the persistent caches (the default: `ruda cache --json` is "
        "`ruda cache list --json`), clear them, or print their folder.",
    )
    actions = cache.add_subparsers(dest="action")
    cache.set_defaults(
        action="list", kind=None, device=None, driver=None, entries=False, json=False
    )
    listing = actions.add_parser("list", help="entries and sizes by kind, driver and device")
    listing.add_argument("--entries", action="store_true", help="one line per entry as well")
    listing.add_argument("--json", action="store_true", help="print JSON for scripts")
    clearing = actions.add_parser("clear", help="remove every entry, or those the options select")
    for parser in (listing, clearing):
        parser.add_argument(
            "--kind", action="append", choices=kinds, help="only this kind (repeatable)"
        )
        parser.add_argument("--device", metavar="D", help="only entries made for D (cpu, opencl:0)")
        parser.add_argument("--driver", metavar="R", help="only entries of driver R (opencl)")
    where = actions.add_parser("path", help="print the cache folder, or one kind's")
    where.add_argument(
        "--kind", action="append", choices=kinds, help="print this kind's folder (repeatable)"
    )


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
    _add_cache_parser(sub)
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
    words = list(sys.argv[1:] if argv is None else argv)
    options = words[1:2] and words[1].startswith("-") and words[1] not in ("-h", "--help")
    if words[:1] == ["cache"] and options:  # ``ruda cache --json``: the listing's options
        words.insert(1, "list")
    args = parser.parse_args(words)
    try:
        return _command(args)
    except (SettingError, PluginError) as exc:  # the user's setting or installation: no trace
        print(f"ruda {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader (``| head``) stopped reading: quiet, as Python advises
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _command(args: argparse.Namespace) -> int:
    if args.command == "conformance":
        return _conformance(args.device, args.report, args.pytest_args)
    if args.command == "cache":
        return _cache(args)

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
                print(f"{r['backend']:<8} {r['status']:<16} {count:<22} {r['runtime']}{reason}")
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
