"""A tuning reports each candidate on the ``ruda.autotune`` logger, and draws a bar on stderr
only when stderr is a terminal."""

from __future__ import annotations

import logging
import os
import pty
import re
import sys

import ruda_core as ruda
from ruda_core.autotune import Tuner

from .kernels import inputs, make_set, run_fast, run_slow, run_too_big


def _tune(name: str) -> str:
    """Tune a new set of three candidates on ``cpu`` (the last one fails) and return its name."""
    client = ruda.client("cpu")
    tunables = make_set(name, ("slow", run_slow), ("fast", run_fast), ("too-big", run_too_big))
    assert Tuner().tune(client, tunables, *inputs(client)).winner == "fast"
    return tunables.name


def test_each_candidate_is_logged_with_its_cost_or_its_error(caplog, capsys):
    caplog.set_level(logging.DEBUG, logger="ruda.autotune")
    name = _tune("logged")
    lines = [r.getMessage() for r in caplog.records if r.name == "ruda.autotune"]
    head = re.escape(f"autotune {name} 4096: ")
    cost = r"[\d.]+ (ns|us|ms|s)"
    expected = [
        (logging.DEBUG, rf"{head}\[1/3\] measuring slow"),
        (logging.INFO, rf"{head}\[1/3\] slow: {cost}"),
        (logging.DEBUG, rf"{head}\[2/3\] measuring fast"),
        (logging.INFO, rf"{head}\[2/3\] fast: {cost}"),
        (logging.DEBUG, rf"{head}\[3/3\] measuring too-big"),
        (logging.INFO, rf"{head}\[3/3\] too-big excluded: TooManyResources\(.*1024 per cube"),
        (logging.INFO, rf"{head}fast wins"),
    ]
    records = [r for r in caplog.records if r.name == "ruda.autotune"]
    assert len(records) == len(expected), lines
    for record, (level, pattern) in zip(records, expected, strict=True):
        assert record.levelno == level and re.match(pattern, record.getMessage()), lines
    assert capsys.readouterr().err == ""  # pytest's capture is no terminal: no bar


def test_no_bar_on_a_pipe(monkeypatch):
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as pipe:
        monkeypatch.setattr(sys, "stderr", pipe)
        _tune("piped")
    with os.fdopen(read_end, "rb") as written:
        assert written.read() == b""


def _read_all(main_end: int) -> str:
    """Everything written to the terminal whose other end is closed: one read may return only
    the part the terminal has passed on so far."""
    chunks = []
    try:
        while chunk := os.read(main_end, 1 << 16):
            chunks.append(chunk)
    except OSError:  # Linux: EIO once the other end is closed and everything was read
        pass
    finally:
        os.close(main_end)
    return b"".join(chunks).decode()


def test_a_bar_on_a_terminal_names_each_candidate_and_is_erased(monkeypatch):
    main_end, terminal_end = pty.openpty()
    with os.fdopen(terminal_end, "w") as terminal:
        monkeypatch.setattr(sys, "stderr", terminal)
        _tune("drawn")
    drawn = _read_all(main_end)
    frames = [frame.strip() for frame in drawn.split("\r") if frame]
    shown = [frame for frame in frames if frame]
    assert [frame.rsplit(" ", 1)[-1] for frame in shown] == ["slow", "fast", "too-big"]
    assert "[....................] 0/3" in shown[0] and "2/3" in shown[2]
    assert frames[-1] == "", "the bar is erased at the end"
