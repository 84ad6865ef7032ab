"""``RUDA_*`` settings: a value ruda cannot use is a ``SettingError`` naming the variable and what
it takes, raised where the setting is read; unset or empty gives the default."""

from __future__ import annotations

import pytest

from ruda_core.runtime import SettingError
from ruda_core.runtime.kernels import DEFAULT_MAX_LOADED_KERNELS, max_loaded_kernels_from_env
from ruda_core.testing.differential import ShrinkBudget, example_count
from ruda_cpu.sanitize import is_sanitizing


@pytest.mark.parametrize("said", ["0", "-2", "2.5", "many", "1e3"])
def test_a_count_that_is_not_a_whole_number_of_at_least_one_is_refused(monkeypatch, said):
    monkeypatch.setenv("RUDA_MAX_LOADED_KERNELS", said)
    with pytest.raises(SettingError, match=f"RUDA_MAX_LOADED_KERNELS={said!r} is not a whole"):
        max_loaded_kernels_from_env()
    monkeypatch.setenv("RUDA_DIFFERENTIAL_EXAMPLES", said)
    with pytest.raises(SettingError, match="RUDA_DIFFERENTIAL_EXAMPLES"):
        example_count()


def test_counts_seconds_and_switches_take_their_values_and_defaults(monkeypatch):
    monkeypatch.setenv("RUDA_MAX_LOADED_KERNELS", " 7 ")
    monkeypatch.setenv("RUDA_DIFFERENTIAL_SHRINK_S", "")
    monkeypatch.setenv("RUDA_SANITIZE", "1")
    assert max_loaded_kernels_from_env() == 7
    assert ShrinkBudget().seconds == 60.0
    assert is_sanitizing()
    monkeypatch.delenv("RUDA_MAX_LOADED_KERNELS")
    monkeypatch.setenv("RUDA_DIFFERENTIAL_SHRINK_S", "0.5")
    monkeypatch.setenv("RUDA_SANITIZE", "0")
    assert max_loaded_kernels_from_env() == DEFAULT_MAX_LOADED_KERNELS
    assert ShrinkBudget().seconds == 0.5
    assert not is_sanitizing()


@pytest.mark.parametrize("said", ["soon", "0", "-1", "nan", "inf"])
def test_seconds_that_are_not_positive_and_finite_are_refused(monkeypatch, said):
    monkeypatch.setenv("RUDA_DIFFERENTIAL_SHRINK_S", said)
    with pytest.raises(SettingError, match=f"RUDA_DIFFERENTIAL_SHRINK_S={said!r} is not a posit"):
        ShrinkBudget()


@pytest.mark.parametrize("said", ["yes", "true", "2", "off"])
def test_a_switch_that_is_neither_0_nor_1_is_refused_naming_both(monkeypatch, said):
    monkeypatch.setenv("RUDA_SANITIZE", said)
    with pytest.raises(SettingError) as info:
        is_sanitizing()
    assert str(info.value).startswith(f"RUDA_SANITIZE={said!r} is neither 0 (do not) nor 1 (")
