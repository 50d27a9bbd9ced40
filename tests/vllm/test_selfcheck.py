"""The real vLLM 0.32 judges what specdeploy emits: every mechanism it supports, and held-back broken configs whose
refusal must reach the user in vLLM's words, located at the profile key that wrote the refused setting.

One subprocess checks every case (importing vLLM costs up to a minute on a loaded box).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specdeploy.engines.vllm import env
from specdeploy.engines.vllm.contract import lines
from specdeploy.engines.vllm.emit import FIELD_ORIGIN, Emitted, ServeLimits, emit
from specdeploy.engines.vllm.selfcheck import Batch, check_emitted, require_accepted
from specdeploy.errors import UsageError

LINE = lines()["0.32"]
LIMITS = ServeLimits(max_num_seqs=8, max_model_len=2048, port=8123)


def _emit(
    mechanism: str | None,
    k: int = 3,
    options: dict[str, Any] | None = None,
    *,
    target: str = "smollm2",
    drafter: str | None = None,
    **kw: Any,
) -> Callable[[dict[str, Path]], Emitted]:
    return lambda m: emit(
        mechanism,
        options or {},
        k,
        target=str(m[target]),
        limits=LIMITS,
        line=LINE,
        drafter=str(m[drafter]) if drafter else None,
        **kw,
    )


def _broken(
    base: Callable[[dict[str, Path]], Emitted], spec: dict[str, Any] | None = None, serve: dict[str, Any] | None = None
) -> Callable[[dict[str, Path]], Emitted]:
    """An emitted config changed behind specdeploy's own checks: only vLLM stands between it and a launch."""

    def build(m: dict[str, Path]) -> Emitted:
        out = base(m)
        new_spec = {k: v for k, v in {**(out.speculative or {}), **(spec or {})}.items() if v is not None}
        new_serve = {**out.serve, **(serve or {}), "speculative-config": new_spec}
        added = {k: FIELD_ORIGIN.get(k, ("speculative", "options", k)) for k in spec or {} if k not in out.origin}
        origin = {**out.origin, **added}
        return dataclasses.replace(out, serve=new_serve, speculative=new_spec, origin=origin)

    return build


ACCEPTED = {
    "plain": _emit(None),
    "ngram with a tuned schedule": _emit(
        "ngram", 4, {"max_matching_ngram_size": 3}, schedule={1: 4, 4: 2}, max_concurrency=6
    ),
    "draft model (3-layer SmolLM2)": _emit("draft_target", 2, drafter="drafter"),
    "eagle3 (shipped head)": _emit("eagle3", 3, {"one_model": True}, drafter="eagle3_head"),
    "eagle": _emit("eagle", 3, drafter="eagle3_head"),
    "mtp on Qwen3-Next": _emit("mtp", 1, target="qwen3_next"),
}
REFUSED = {  # case -> (emitted, the profile path it is located at, vLLM's words)
    "prompt_lookup_min > max": (
        _broken(_emit("ngram", 3, {"max_matching_ngram_size": 2}), {"prompt_lookup_min": 5}),
        "speculative.options.prompt_lookup_min",
        "prompt_lookup_min=5 must be <= prompt_lookup_max=2",
    ),
    "an unknown key": (
        _broken(_emit("ngram"), {"lookahead": 2}),
        "speculative.options.lookahead",
        "lookahead Unexpected keyword argument",
    ),
    "K = 0": (
        _broken(_emit("ngram"), {"num_speculative_tokens": 0}),
        "speculative.draft_len",
        "num_speculative_tokens Input should be greater than 0",
    ),
    "K < 0": (
        _broken(_emit("ngram"), {"num_speculative_tokens": -2}),
        "speculative.draft_len",
        "Input should be greater than 0",
    ),
    "eagle3 without a model": (
        _broken(_emit("eagle3", drafter="eagle3_head"), {"model": None}),
        "speculative.draft_model",
        "without speculative model",
    ),
    "mtp on a Llama target": (_emit("mtp", 1), "speculative.mechanism", "Unsupported speculative method: 'mtp'"),
    "a schedule not starting at batch 1": (
        _broken(_emit("ngram"), {"num_speculative_tokens_per_batch_size": [[2, 8, 3]]}),
        "speculative.schedule",
        "The first batch-size range must start at 1",
    ),
    "a schedule with K < 0": (
        _broken(_emit("ngram"), {"num_speculative_tokens_per_batch_size": [[1, 8, -1]]}),
        "speculative.schedule",
        "num_speculative_tokens_per_batch_size values must be >= 0",
    ),
    "a dtype vLLM does not know": (
        _broken(_emit("ngram"), serve={"dtype": "float8"}),
        "target.dtype",
        "argument --dtype: invalid choice: 'float8'",
    ),
    # methods vLLM 0.32 has that this CPU installation cannot run: refused by vLLM itself, with its reason
    "suffix without arctic-inference": (
        _emit("suffix", 12, {"max_tree_depth": 24}),
        "speculative.mechanism",
        "ImportError: Arctic Inference is required for suffix decoding",
    ),
    "dspark on a CPU (V1 model runner)": (
        _emit("dspark", 7),
        "speculative.mechanism",
        "Model Runner V1 does not support: dspark speculative decoding",
    ),
}


@pytest.fixture(scope="module")
def checked(vllm_install: env.VllmInstall, models: dict[str, Path]) -> tuple[Batch, dict[str, Emitted]]:
    cases = {name: build(models) for name, build in ACCEPTED.items()}
    cases.update({name: build(models) for name, (build, _, _) in REFUSED.items()})
    batch = check_emitted(list(cases.values()))
    assert batch.version == vllm_install.version
    return batch, cases


def _result(checked: tuple[Batch, dict[str, Emitted]], name: str) -> Any:
    batch, cases = checked
    return batch.results[list(cases).index(name)], cases[name], batch.version


@pytest.mark.parametrize("name", ACCEPTED)
def test_vllm_accepts_what_specdeploy_emits(checked: tuple[Batch, dict[str, Emitted]], name: str) -> None:
    result, emitted, version = _result(checked, name)
    assert version == "0.32.0"
    assert result.ok, result.error
    if emitted.speculative is not None:
        assert result.speculative["method"] == emitted.speculative["method"]
        assert result.speculative["num_speculative_tokens"] == emitted.speculative["num_speculative_tokens"]


def test_the_schedule_reaches_vllm_as_emitted(checked: tuple[Batch, dict[str, Emitted]]) -> None:
    result, _, _ = _result(checked, "ngram with a tuned schedule")
    assert result.stage == "schedule"  # expanded by vLLM's own build_dynamic_sd_schedule_lookup
    assert result.speculative["num_speculative_tokens_per_batch_size"] == [[1, 3, 4], [4, 6, 2], [7, 8, 0]]
    assert result.speculative["prompt_lookup_min"] == result.speculative["prompt_lookup_max"] == 3


@pytest.mark.parametrize("name", REFUSED)
def test_vllms_refusal_reaches_the_user_located(checked: tuple[Batch, dict[str, Emitted]], name: str) -> None:
    result, emitted, version = _result(checked, name)
    _, path, words = REFUSED[name]
    assert not result.ok
    with pytest.raises(UsageError) as caught:
        require_accepted(result, version, emitted, LINE)
    assert caught.value.issues[0].dotted == path
    assert words in caught.value.message and "[type=" not in caught.value.message
    assert caught.value.exit_code == 2


def test_suffix_without_arctic_inference_says_where_to_install_it(checked: tuple[Batch, dict[str, Emitted]]) -> None:
    result, emitted, version = _result(checked, "suffix without arctic-inference")
    assert emitted.speculative == {
        "method": "suffix",
        "num_speculative_tokens": 12,
        "suffix_decoding_max_tree_depth": 24,
    }  # what specdeploy emits, unchanged
    with pytest.raises(UsageError) as caught:
        require_accepted(result, version, emitted, LINE)
    assert caught.value.message.startswith(
        "speculative.mechanism: vLLM 0.32.0 refuses the emitted configuration "
        "(engine config): ImportError: Arctic Inference is required"
    )
    hint = caught.value.hint or ""
    assert "arctic-inference package in vLLM's environment" in hint and "-m pip install arctic-inference" in hint
    assert caught.value.issues[0].suggestion == hint
