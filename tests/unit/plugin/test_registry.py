"""Built-ins go through the entry-point door; the registry and plugins/ agree in both directions."""

from __future__ import annotations

from pathlib import Path

from specdeploy.plugin.registry import registry
from tests.helpers import pyproject

ROOT = Path(__file__).resolve().parents[3]
BUILTINS = {
    "eagle3",
    "mtp",
    "draft_target",
    "ngram",
    "medusa",
    "lookahead",
    "eagle",
    "redrafter",
    "dflash",
    "pard",
    "sa",
    "dspark",
    "suffix",
}


def test_every_builtin_is_an_entry_point_and_a_plugin_file() -> None:
    declared = pyproject()["project"]["entry-points"]["specdeploy.mechanisms"]
    files = {p.stem for p in (ROOT / "plugins" / "specdeploy_mechanisms").glob("*.py") if not p.stem.startswith("_")}
    assert set(declared) == BUILTINS == files
    assert BUILTINS <= set(registry())
    for name, target in declared.items():
        module = target.split(":")[0]
        assert registry()[name].__module__ == module


def test_every_option_is_documented() -> None:
    for name, cls in registry().items():
        for field, info in cls.Options.model_fields.items():
            assert info.description, f"{name}.options.{field} lacks a docstring"


def test_every_builtin_engine_is_an_entry_point() -> None:
    from specdeploy.plugin.registry import engines

    declared = pyproject()["project"]["entry-points"]["specdeploy.engines"]
    assert set(declared) == {"pytorch", "tensorrt", "reference", "vllm"} <= set(engines())
    for name, engine in engines().items():
        assert engine.efficiency, name  # a performance-model profile (Triton layouts are optional: vLLM serves itself)


def test_an_unknown_backend_is_refused_with_the_closest_engine(tmp_path: Path) -> None:
    from specdeploy.issues import ProfileError
    from specdeploy.profile.loader import load_profile

    profile = tmp_path / "p.yaml"
    profile.write_text("target: {model: m}\nruntime: {backend: referense}\n")
    try:
        load_profile(str(profile))
    except ProfileError as exc:
        text = str(exc)
    else:
        raise AssertionError("an unknown backend validated")
    assert "runtime.backend" in text and "did you mean 'reference'" in text
