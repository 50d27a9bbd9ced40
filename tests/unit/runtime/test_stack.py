"""The runtime hands every supported transformers its KV cache, and refuses a transformers it is not tested on.

transformers 5.17 names the forward's cache keyword `past_key_values` and swallows an unknown `cache=` in
`**kwargs`: the runtime then decoded without a cache, wrong and silent (issue 18). CI's venv has a newer release,
so `Keyword517` is a double of that release's interface: the same model behind a forward with 5.17's signature
that drops unknown keywords as 5.17 did. The real 5.17 runs in tests/slow/test_transformers_low_end.py.
"""

from __future__ import annotations

import re

import pytest
import torch

from specdeploy.engines.reference.runtime import generate
from specdeploy.engines.reference.runtime.models import ModelPair
from specdeploy.engines.reference.runtime.stack import (
    OPT_OUT,
    TESTED,
    cache_keyword,
    check_transformers,
    parse,
    supported_range,
)
from specdeploy.errors import MissingDependency
from tests.helpers import pyproject
from tests.unit.runtime.tiny import hf_greedy, random_prompts, tiny_llama


def keyword_517(model: torch.nn.Module) -> torch.nn.Module:
    """`model` re-classed so its forward has transformers 5.17's signature (cache in `past_key_values`)."""
    base, keyword = type(model), cache_keyword(model)

    class Keyword517(base):  # type: ignore[misc, valid-type]
        def forward(
            self,
            input_ids=None,
            attention_mask=None,
            position_ids=None,
            past_key_values=None,
            inputs_embeds=None,
            use_cache=None,
            logits_to_keep=0,
            **kwargs,
        ):
            kwargs = {k: v for k, v in kwargs.items() if k not in ("cache", "past_key_values")}  # 5.17: ignored
            return base.forward(
                self,
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                inputs_embeds=inputs_embeds,
                use_cache=use_cache,
                logits_to_keep=logits_to_keep,
                **{keyword: past_key_values},
                **kwargs,
            )

    model.__class__ = Keyword517
    return model


def test_a_model_with_the_old_cache_keyword_decodes_like_generate():
    prompts = random_prompts(4, 96, seed=3)
    reference = hf_greedy(tiny_llama(0), prompts, 10)
    old = keyword_517(tiny_llama(0))
    assert cache_keyword(old) == "past_key_values"
    for concurrency in (1, 3):
        assert generate(ModelPair(old), prompts, "none", 0, concurrency, 10)[0] == reference


def test_a_cache_the_model_ignores_is_an_error_not_wrong_output():
    model = tiny_llama(0)
    base = type(model)

    class Ignores(base):  # type: ignore[misc, valid-type]
        def forward(self, *args, cache=None, past_key_values=None, **kwargs):  # takes the cache, then drops it
            return base.forward(self, *args, **kwargs)

    model.__class__ = Ignores
    with pytest.raises(MissingDependency) as err:
        generate(ModelPair(model), random_prompts(1, 96, seed=3), "none", 0, 1, 4)
    assert "did not fill its KV cache" in err.value.message


@pytest.mark.parametrize("version", ["5.16.1", "4.57.6", "5.25.0", "6.0.0", "5.25.0.dev0"])
def test_an_untested_transformers_is_refused(version, monkeypatch):
    monkeypatch.delenv(OPT_OUT, raising=False)
    with pytest.raises(MissingDependency) as err:
        check_transformers(version)
    assert version in err.value.message and supported_range() in err.value.message
    assert OPT_OUT in (err.value.hint or "")


def test_the_opt_out_warns_loudly(monkeypatch, capsys):
    monkeypatch.setenv(OPT_OUT, "1")
    check_transformers("5.16.1")
    assert "WARNING: transformers 5.16.1 is outside" in capsys.readouterr().err


@pytest.mark.parametrize("version", ["5.17.0", "5.20.2", "5.24.0", "5.24.1rc1"])
def test_the_supported_range_is_accepted(version, monkeypatch):
    monkeypatch.delenv(OPT_OUT, raising=False)
    check_transformers(version)
    assert parse(version)[0] == 5


def test_the_installed_transformers_is_in_range():
    import transformers

    check_transformers(transformers.__version__)


def test_pyproject_declares_the_supported_range():
    extra = pyproject()["project"]["optional-dependencies"]["reference"]
    declared = [re.sub(r"\s", "", d) for d in extra if re.match(r"transformers\b", d)]
    assert declared == [f"transformers{supported_range()}"], f"TESTED = {TESTED}"


def test_load_pair_refuses_an_untested_transformers_before_loading(monkeypatch):
    import transformers

    from specdeploy.engines.reference.runtime import load_pair

    monkeypatch.delenv(OPT_OUT, raising=False)
    monkeypatch.setattr(transformers, "__version__", "5.16.1")
    with pytest.raises(MissingDependency) as err:
        load_pair("/nonexistent/model")
    assert "transformers 5.16.1 is outside" in err.value.message


def test_doctor_says_when_the_installed_transformers_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """doctor said "available" for any transformers while the runtime refuses an untested one at load."""
    import importlib.metadata

    from specdeploy import api

    assert api.doctor().engines["reference_runtime"].startswith("available (transformers 5.")
    monkeypatch.setattr(importlib.metadata, "version", lambda _name: "5.30.0")
    line = api.doctor().engines["reference_runtime"]
    assert line.startswith("refuses transformers 5.30.0") and "transformers>=5.17,<5.25" in line
