"""``ruda_core.lang`` is the kernel language and nothing else: ``__all__`` names it, ``dir()``
shows it, and the modules that implement it are not attributes of the package."""

from __future__ import annotations

from types import ModuleType

import ruda_core.lang as lang


def test_dir_shows_the_language_alone():
    assert sorted(dir(lang)) == sorted(lang.__all__)
    assert {"kernel", "Array", "ABSOLUTE_POS", "f32", "sync_units", "cmma"} <= set(dir(lang))


def test_the_implementing_modules_are_not_attributes():
    modules = {n for n, v in vars(lang).items() if isinstance(v, ModuleType)}
    assert modules == {"cmma", "mbarrier", "pipeline", "wgmma"}  # namespaces: cmma.Matrix …
    for name in ("expressions", "statements", "launcher", "borrow", "types", "syntax"):
        assert not hasattr(lang, name), name


def test_every_name_in_all_is_there():
    missing = [n for n in lang.__all__ if not hasattr(lang, n)]
    assert not missing
