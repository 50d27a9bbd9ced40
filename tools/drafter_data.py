"""Training data for the shipped drafters: the target's own greedy answers to instruction prompts, as jsonl
records {prompt, prompt_ids, answer_ids}, appended wave by wave so whatever finished within a budget is kept.

Prompts can come from the target itself (Magpie, arXiv 2406.08464): an instruct model fed only the chat
template's user-turn header samples user messages like those it was tuned on — chat questions of every
kind (writing, role-play, reasoning, math, coding, STEM, humanities), which is what a drafter meets when
the model is served, and what no offline dataset here offers apart from MT-Bench (the evaluation set).
A few opening words per draw spread the samples over those kinds.

    .venv/bin/python tools/drafter_data.py --out A.jsonl --minutes 40 --seed 1
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch

OPENERS = [
    "",
    "",
    "",
    "Write",
    "Compose",
    "Draft",
    "Imagine",
    "Pretend",
    "Act as",
    "Describe",
    "Explain",
    "What",
    "How",
    "Why",
    "Which",
    "Suppose",
    "Solve",
    "Given",
    "Calculate",
    "Implement",
    "Extract",
    "Summarize",
    "Rewrite",
    "Compare",
    "Discuss",
    "Evaluate",
    "Can you",
    "Please",
    "I",
    "In",
    "Identify",
    "List",
    "Create",
    "Help",
    "You are",
    "Consider",
    "Analyze",
    "Edit",
    "Tell me",
    "Craft",
]


def log(msg: str) -> None:
    print(f"[drafter_data {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def chat_ids(tokenizer, prompt: str) -> list[int]:
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=True
    )
    if isinstance(ids, dict) or hasattr(ids, "input_ids"):
        ids = ids["input_ids"]
    return list(ids)


def user_header(tokenizer) -> str:
    """The chat template up to where a user's message starts (system prompt included, as served)."""
    sentinel = "\x00SENTINEL\x00"
    text = tokenizer.apply_chat_template([{"role": "user", "content": sentinel}], tokenize=False)
    return text.split(sentinel)[0]


@torch.no_grad()
def magpie_prompts(
    pair,
    n: int,
    rng: random.Random,
    concurrency: int,
    temperature: float = 0.8,
    max_len: int = 64,
    exclude: frozenset[str] = frozenset(),
) -> list[str]:
    """Up to n distinct user messages sampled from the target; unfinished (no end of turn within max_len) and
    very short ones are dropped."""
    from specdeploy.engines.reference.runtime import generate

    tok = pair.tokenizer
    header = user_header(tok)
    openers = [rng.choice(OPENERS) for _ in range(n)]
    outs, _ = generate(
        pair,
        [tok(header + o, add_special_tokens=False)["input_ids"] for o in openers],
        mechanism="none",
        draft_len=1,
        concurrency=concurrency,
        max_new_tokens=max_len,
        temperature=temperature,
        seed=rng.randrange(2**31),
    )
    kept, seen = [], set(exclude)
    for opener, out in zip(openers, outs, strict=True):
        if not out or out[-1] not in pair.eos_token_ids:
            continue
        text = (opener + tok.decode(out[:-1], skip_special_tokens=True)).strip()
        if len(text.split()) >= 4 and text.lower() not in seen:
            seen.add(text.lower())
            kept.append(text)
    return kept


@torch.no_grad()
def answer(pair, prompts: list[str], concurrency: int, max_new: int) -> list[dict]:
    """The target's greedy answers through the reference runtime (mechanism none), as records."""
    from specdeploy.engines.reference.runtime import generate

    enc = [chat_ids(pair.tokenizer, p) for p in prompts]
    outs, _ = generate(pair, enc, mechanism="none", draft_len=1, concurrency=concurrency, max_new_tokens=max_new)
    return [
        {"prompt": p, "prompt_ids": ids, "answer_ids": list(a)} for p, ids, a in zip(prompts, enc, outs, strict=True)
    ]


def generate_runtime_answers(
    pair, prompts: list[str], minutes: float, concurrency: int, max_new: int, path: Path
) -> None:
    """Answers to fixed prompts, in chunks of 4x the concurrency (in-flight batching keeps the batch full);
    appending to a file never answers the same prompt twice."""
    deadline = time.time() + minutes * 60
    seen = {r["prompt"] for r in load_answers(path)} if path.exists() else set()
    todo = [p for p in prompts if p not in seen]
    chunk = 4 * concurrency
    for start in range(0, len(todo), chunk):
        if time.time() > deadline:
            break
        append(path, answer(pair, todo[start : start + chunk], concurrency, max_new))


def generate_magpie_answers(
    pair, minutes: float, concurrency: int, max_new: int, path: Path, rng: random.Random, exclude: frozenset[str]
) -> None:
    """Rounds of sampled prompts, then their answers, until the budget is spent."""
    deadline = time.time() + minutes * 60
    seen = {r["prompt"].lower() for r in load_answers(path)} if path.exists() else set()
    while time.time() < deadline:
        prompts = magpie_prompts(pair, 4 * concurrency, rng, concurrency, exclude=exclude | seen)
        seen |= {p.lower() for p in prompts}
        append(path, answer(pair, prompts, concurrency, max_new))


def append(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    log(f"{path.name}: +{len(records)} answers ({sum(len(r['answer_ids']) for r in records)} answer tokens)")


def load_answers(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def evaluation_prompts() -> frozenset[str]:
    """MT-Bench and HumanEval texts, lower-cased: never kept as training prompts."""
    from specdeploy.prompts import load_humaneval, load_mtbench

    return frozenset(t.lower().strip() for r in load_mtbench() + load_humaneval() for t in r.turns)


def main() -> None:
    from specdeploy.engines.reference.runtime.models import SMOLLM2_REF, load_pair

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="jsonl answers file (appended to)")
    ap.add_argument("--minutes", type=float, required=True)
    ap.add_argument("--seed", type=int, default=0, help="use a different seed per parallel generator")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=96)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pair = load_pair(SMOLLM2_REF, device="cpu")  # the target as served (its CPU kernels)
    generate_magpie_answers(
        pair, args.minutes, args.concurrency, args.max_new, args.out, random.Random(args.seed), evaluation_prompts()
    )


if __name__ == "__main__":
    main()
