"""Triton layouts are the engines' (plugin/layout.py): the core finds each through the registry and asks it what
it used to decide by comparing layout names (render, check-repo, serve, the deploy topology)."""

from __future__ import annotations

import pytest

from specdeploy._resources import data_dir
from specdeploy.plugin import TritonLayout
from specdeploy.plugin.registry import engines, layout_named, triton_layouts


def test_every_declared_layout_comes_from_its_engine() -> None:
    declared = [(engine, name) for engine in engines().values() for name in engine.layouts]
    assert {name for _, name in declared} == {"llmapi", "engine", "reference", "vllm"}
    for engine, name in declared:
        layout = layout_named(name)
        assert isinstance(layout, TritonLayout) and layout.name == name
        assert type(layout).__module__.startswith(type(engine).__module__.rsplit(".", 1)[0])  # the engine's package
        assert (data_dir("templates") / layout.template_folder).is_dir()
    assert [layout.name for layout in triton_layouts()] == list(dict.fromkeys(name for _, name in declared))
    assert layout_named("no-such-layout") is None


def test_what_the_core_asks_a_layout() -> None:
    def having(attribute: str) -> list[str]:
        return sorted(layout.name for layout in triton_layouts() if getattr(layout, attribute))

    assert having("needs_llm_args") == ["llmapi"]  # render passes the build's LLM() arguments
    assert having("portable") == ["llmapi"]  # deploy.targets ship it
    assert having("serve_note") == ["engine"]  # the local server lacks the C++ backend
    assert having("templated_chat") == ["engine", "llmapi"]  # the OpenAI frontend templates chat for them


def test_a_declared_layout_the_engine_does_not_provide_is_a_plugin_error(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from specdeploy.plugin.registry import PluginError, get_engine

    engine = get_engine("reference")
    monkeypatch.setattr(type(engine), "layouts", ("reference", "toy"))
    layout_named.cache_clear()
    try:
        with pytest.raises(PluginError, match="engine 'reference' declares the Triton layout 'toy' but"):
            layout_named("toy")
    finally:
        layout_named.cache_clear()
