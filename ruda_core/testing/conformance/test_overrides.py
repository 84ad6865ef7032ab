"""The xfail overrides drivers declare (``ruda_conformance_xfails``): each needs a reason and must
name an existing conformance test, so no override silently hides nothing or everything."""

from __future__ import annotations

from ruda_core.testing.overrides import conformance_functions, matches


def test_every_override_has_a_reason_and_matches_a_test(ruda_overrides):
    problems = ruda_overrides.problems()
    assert not problems, "invalid conformance overrides:\n  " + "\n  ".join(problems)


def test_override_patterns_match_conformance_names():
    names = conformance_functions()
    assert "test_overrides::test_every_override_has_a_reason_and_matches_a_test" in names
    assert matches("test_memory::test_round_trip", "test_memory::test_round_trip[0B]")
    assert matches("test_ops_float::*[f16]", "test_ops_float::test_known_answers[f16]")
    assert not matches("test_ops_float::*[f16]", "test_ops_float::test_known_answers[f32]")
    assert matches("*::test_plane_*", "test_plane::test_plane_votes")
    assert not matches("test_plane::test_plane", "test_plane::test_plane_votes")
