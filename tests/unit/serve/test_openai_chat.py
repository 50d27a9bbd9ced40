"""Chat in the OpenAI frontend without a server: the messages it takes (and refuses, in OpenAI's error shape), the
conversation rendered with a real (tiny, WordLevel) tokenizer's chat template, the single-turn fallback and where
each layout's tokenizer is found. Before: any system message or second turn was a 400."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from specdeploy.serve.openai_chat import Templater, chat_prompt, conversation, render, tokenizer_of
from specdeploy.serve.openai_frontend import ApiError, Input, Served, TokenizerRef
from tests.helpers import hub_cache_model
from tests.unit.serve.triton_double import inputs

WORDS = ["<unk>", "<s>", "</s>", "system", "user", "assistant", "hello", "world", "is", "fast", "be", "brief"]
# ChatML-like, in words the vocabulary knows; a BOS first, as Llama's templates write it
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'assistant' and loop.first %}"
    "{{ raise_exception('Conversation must start with system or user') }}{% endif %}"
    "{{ m['role'] }} {{ m['content'] }} </s> {% endfor %}{% if add_generation_prompt %}assistant{% endif %}"
)
REFERENCE_INPUTS = inputs("text_input", "max_tokens", "chat_template")


def tokenizer(adds_bos: bool, template: str | None = TEMPLATE) -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if adds_bos:  # what Llama's tokenizer does on encode
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    fast.chat_template = template
    return fast


def refused(messages: Any) -> ApiError:
    with pytest.raises(ApiError) as err:
        conversation(messages)
    assert err.value.status == 400 and set(err.value.body()["error"]) == {"message", "type", "param", "code"}
    return err.value


def test_system_developer_and_turns_become_the_templates_conversation() -> None:
    messages = [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": "hello", "name": "ann"},
        {"role": "assistant", "content": [{"type": "text", "text": "world"}, {"type": "text", "text": "is"}]},
        {"role": "user", "content": "fast"},
    ]
    assert conversation(messages) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hello", "name": "ann"},
        {"role": "assistant", "content": "world\nis"},
        {"role": "user", "content": "fast"},
    ]


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        ([{"role": "tool", "content": "42", "tool_call_id": "x"}], "messages[0].role"),
        ([{"role": "user", "content": "hi"}, {"role": "function", "content": "42"}], "messages[1].role"),
        ([{"content": "hi"}], "messages[0].role"),
        ([{"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]}], "messages[0].tool_calls"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}], "messages[0].content[0]"),
        ([{"role": "user", "content": None}], "messages[0].content"),
        ([{"role": "user", "content": "hi", "name": 5}], "messages[0].name"),
        ([], "messages"),
        ("hello", "messages"),
    ],
)
def test_what_chat_refuses_is_named(messages: Any, param: str) -> None:
    error = refused(messages)
    assert error.param == param and error.body()["error"]["type"] == "invalid_request_error"


def test_rendered_text_encodes_to_the_templates_own_ids() -> None:
    """The model encodes text_input with special tokens added: a BOS the template wrote is not doubled."""
    conv = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    for adds_bos in (False, True):
        tok = tokenizer(adds_bos)
        text, count = render(tok, conv)
        ids = tok.apply_chat_template(conv, add_generation_prompt=True, tokenize=True)
        ids = ids["input_ids"] if hasattr(ids, "keys") else ids
        assert tok.encode(text) == list(ids) and count == len(ids) == 9
        assert text.startswith("<s>") != adds_bos
    with pytest.raises(ApiError, match="chat template refused the conversation: Conversation must start"):
        render(tokenizer(False), [{"role": "assistant", "content": "hello"}])


def served(
    tmp_path: Path,
    layout: str,
    names: dict[str, Input] = REFERENCE_INPUTS,
    template: str | None = TEMPLATE,
    found: bool = True,
) -> Served:
    tokenizer(False, template).save_pretrained(tmp_path / "tok")
    (tmp_path / "tok" / "config.json").write_text('{"model_type": "llama"}')  # a model folder, as the runtime wants
    return Served("127.0.0.1:1", "m", names, True, layout, TokenizerRef(str(tmp_path / "tok")) if found else None)


def prompt(where: Served, messages: list[dict[str, Any]]) -> tuple[str, bool, int | None]:
    return asyncio.run(chat_prompt(Templater(where), {"messages": messages}))


TURNS = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "world"},
    {"role": "user", "content": "fast"},
]


def test_every_layout_gets_the_rendered_conversation(tmp_path: Path) -> None:
    # reference: sent with chat_template false; engine, llmapi: text_input is tokenized as it is
    for layout, names in (
        ("reference", REFERENCE_INPUTS),
        ("engine", inputs("text_input")),
        ("llmapi", inputs("text_input")),
    ):
        text, raw, count = prompt(served(tmp_path / layout, layout, names), TURNS)
        assert (text, raw, count) == (
            "<s>system be brief </s> user hello </s> assistant world </s> user fast </s> assistant",
            True,
            15,
        )


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"names": inputs("text_input")}, "applies its own single-turn chat template"),
        ({"found": False}, "no tokenizer was found"),
        ({"template": None}, "has no chat template"),
    ],
)
def test_without_a_way_to_render_chat_is_one_user_message(tmp_path: Path, kwargs: dict[str, Any], why: str) -> None:
    where = served(tmp_path, "reference", **kwargs)
    assert prompt(where, [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]) == ("hello", False, None)
    with pytest.raises(ApiError, match=f"takes one user message for this model: .*{why}"):
        prompt(where, TURNS)


def test_an_unloadable_tokenizer_leaves_chat_single_turn(tmp_path: Path) -> None:
    where = Served("127.0.0.1:1", "m", REFERENCE_INPUTS, True, "engine", TokenizerRef(str(tmp_path / "missing")))
    with pytest.raises(ApiError, match="could not be loaded"):
        prompt(where, TURNS)


def test_each_layout_names_its_tokenizer(tmp_path: Path) -> None:
    configs = {
        "m": {"parameters": {"target_ref": {"string_value": "HuggingFaceTB/SmolLM2-135M-Instruct"}}},
        "preprocessing": {"parameters": {"tokenizer_dir": {"string_value": "/models/tok"}}},
    }
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.yaml").write_text("model: /ckpt\ntriton_config: {decoupled: true}\n")
    found = TokenizerRef("HuggingFaceTB/SmolLM2-135M-Instruct")
    assert tokenizer_of(tmp_path, "reference", "m", configs.__getitem__) == found
    assert tokenizer_of(tmp_path, "engine", "ensemble", configs.__getitem__) == TokenizerRef("/models/tok")
    assert tokenizer_of(tmp_path, "llmapi", "m", configs.__getitem__) == TokenizerRef("/ckpt")
    (tmp_path / "m" / "1" / "model.yaml").write_text("model: org/ckpt\nrevision: r1\ntokenizer_revision: r2\n")
    assert tokenizer_of(tmp_path, "llmapi", "m", configs.__getitem__) == TokenizerRef("org/ckpt", "r1")
    (tmp_path / "m" / "1" / "model.yaml").write_text("model: /ckpt\nrevision: r1\ntokenizer: /tok\n")
    assert tokenizer_of(tmp_path, "llmapi", "m", configs.__getitem__) == TokenizerRef("/tok")
    (tmp_path / "m" / "1" / "model.yaml").write_text("model: /ckpt\ntokenizer: org/tok\ntokenizer_revision: r2\n")
    assert tokenizer_of(tmp_path, "llmapi", "m", configs.__getitem__) == TokenizerRef("org/tok", "r2")
    configs["preprocessing"]["parameters"]["tokenizer_dir"]["string_value"] = "${tokenizer_dir}"  # NGC, unfilled
    assert tokenizer_of(tmp_path, "engine", "ensemble", configs.__getitem__) is None
    assert tokenizer_of(tmp_path, "unknown", "m", configs.__getitem__) is None


def test_a_pinned_hub_tokenizer_loads_at_its_revision(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """model.yaml pins the checkpoint (`revision`, written by `build`): chat renders with that revision's template,
    not whatever the cache's `main` points at. Before, the revision was dropped and `main` was loaded."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))  # read at call time; the env var only at import
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    for rev, word in (("a" * 40, "hello"), ("b" * 40, "world")):  # refs/main ends at the last one: b
        folder = tmp_path / rev
        tokenizer(False, TEMPLATE.replace("assistant{% endif %}", word + "{% endif %}")).save_pretrained(folder)
        hub_cache_model(
            cache,
            "test-openai-chat/pinned",
            {"model_type": "llama"},
            revision=rev,
            files={p.name: p.read_bytes() for p in folder.iterdir()},
        )
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.yaml").write_text(f"model: test-openai-chat/pinned\nrevision: {'a' * 40}\n")
    ref = tokenizer_of(tmp_path, "llmapi", "m", {}.__getitem__)
    where = Served("127.0.0.1:1", "m", inputs("text_input"), True, "llmapi", ref)
    text, _, _ = prompt(where, [{"role": "user", "content": "fast"}])
    assert text.endswith("</s> hello")
