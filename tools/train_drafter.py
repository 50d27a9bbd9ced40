"""Distil a small SmolLM2 drafter for the reference runtime's draft_target mechanism.

Recipe: the drafter is a LlamaForCausalLM with N layers initialised from the target's first N layers;
it borrows the target's (tied) embedding, and its LM head is the target's head cut to the draft
vocabulary (the most frequent tokens of the training text), so a drafter step is cheap. Only its
layers and final norm are trained (fp32: this CPU lacks avx512_bf16, bf16 autocast ran 7x slower;
AdamW), by forward KL to the target's next-token
distribution restricted to the draft vocabulary. Data, all offline: the target's own greedy answers
to instruction prompts built from stdlib docstrings (optional: ~50 tokens/s on 2 loaded cores), Python's
pydoc topic texts framed as chat answers, and CPython stdlib source (code); split by file/topic into
train / held-out.

    .venv/bin/python tools/train_drafter.py --minutes 24
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import random
import sysconfig
import time
from collections import Counter
from pathlib import Path

import torch

from specdeploy._io import write_json_atomic
from specdeploy.runtime.models import (
    DRAFTER_DIR,
    SMOLLM2_REF,
    load_pair,
    own_drafter_state,
    share_embeddings,
    write_shared_meta,
)

TOPICS = ["how it works", "when to use it", "a short example", "common pitfalls", "a one-paragraph summary"]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def stdlib_files(held_out: bool) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "test" not in p.parts and "site-packages" not in p.parts)
    pick = [p for p in files if (int(hashlib.md5(p.name.encode()).hexdigest(), 16) % 10 == 0) == held_out]
    return pick


def docstring_prompts(files: list[Path], n: int, rng: random.Random) -> list[str]:
    """Instruction prompts from stdlib docstrings: varied, English, and not the benchmark sets."""
    lines: list[str] = []
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="ignore"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                doc = ast.get_docstring(node)
                if doc and 20 < len(doc.split("\n")[0]) < 160:
                    lines.append((node.name, doc.split("\n")[0]))
    rng.shuffle(lines)
    forms = [
        "Write a Python function `{0}` that does the following: {1}",
        "Explain in simple words: {1}",
        "What does a function called `{0}` probably do? Its documentation says: {1}",
        "Give {2} of the following idea: {1}",
    ]
    return [rng.choice(forms).format(name, doc, rng.choice(TOPICS)) for name, doc in lines[:n]]


@torch.no_grad()
def generate_answers(pair, prompts: list[str], minutes: float, batch: int, max_new: int) -> list[list[int]]:
    """The target's own greedy answers (chat template applied): what the drafter must predict at run time."""
    tok, model = pair.tokenizer, pair.target
    tok.padding_side = "left"
    deadline, out = time.time() + minutes * 60, []
    for start in range(0, len(prompts), batch):
        if time.time() > deadline:
            break
        texts = [
            tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=False)
            for p in prompts[start : start + batch]
        ]
        enc = tok(texts, return_tensors="pt", padding=True)
        gen = model.generate(**enc, max_new_tokens=max_new, do_sample=False, pad_token_id=tok.pad_token_id or 0)
        for row, mask in zip(gen, enc["attention_mask"], strict=True):
            ids = row[int(mask.numel() - mask.sum()) :].tolist()
            out.append(ids)
        log(f"generated {len(out)} answers ({sum(map(len, out))} tokens)")
    return out


def doc_chats(tok, held_out: bool, seq_len: int) -> list[list[int]]:
    """Python's own reference prose (pydoc topics) framed as chat answers: English, chat-formatted."""
    from pydoc_data.topics import topics

    seqs = []
    for name, text in sorted(topics.items()):
        if (int(hashlib.md5(name.encode()).hexdigest(), 16) % 10 == 0) != held_out:
            continue
        for i, part in enumerate(text.split("\n\n\n")):
            if len(part) < 200:
                continue
            msgs = [{"role": "user", "content": f"Explain '{name}' in Python ({i + 1})."},
                    {"role": "assistant", "content": part.strip()}]
            ids = tok.apply_chat_template(msgs, tokenize=False)
            ids = tok.encode(ids)
            seqs += [ids[j : j + seq_len] for j in range(0, len(ids) - seq_len // 4, seq_len)]
    return [s for s in seqs if len(s) >= 16]


def code_sequences(tok, files: list[Path], seq_len: int) -> list[list[int]]:
    seqs = []
    for path in files:
        ids = tok.encode(path.read_text(encoding="utf-8", errors="ignore"))
        seqs += [ids[i : i + seq_len] for i in range(0, len(ids) - seq_len // 2, seq_len)]
    return [s for s in seqs if len(s) >= 16]


def batches(seqs: list[list[int]], batch: int, seq_len: int, rng: random.Random):
    while True:
        rng.shuffle(seqs)
        for i in range(0, len(seqs) - batch + 1, batch):
            chunk = [s[:seq_len] for s in seqs[i : i + batch]]
            width = max(map(len, chunk))
            ids = torch.zeros(len(chunk), width, dtype=torch.long)
            mask = torch.zeros(len(chunk), width, dtype=torch.long)
            for r, s in enumerate(chunk):
                ids[r, : len(s)] = torch.tensor(s)
                mask[r, : len(s)] = 1
            yield ids, mask


def build_drafter(target, layers: int, vocab_ids: torch.Tensor):
    from transformers import LlamaForCausalLM

    config = target.config.__class__.from_dict(target.config.to_dict())
    config.num_hidden_layers = layers
    config.tie_word_embeddings = True
    drafter = LlamaForCausalLM(config).to(torch.float32)
    for i in range(layers):
        drafter.model.layers[i].load_state_dict(target.model.layers[i].state_dict())
    drafter.model.norm.load_state_dict(target.model.norm.state_dict())
    share_embeddings(drafter, target, vocab_ids)
    drafter.model.embed_tokens.weight.requires_grad_(False)
    return drafter


def kl_step(target, drafter, ids, mask, vocab_ids):
    """Forward KL(target || drafter) over the draft vocabulary, plus top-1 agreement with the full target."""
    with torch.no_grad():
        t_logits = target(input_ids=ids, attention_mask=mask).logits
    d_logits = drafter(input_ids=ids, attention_mask=mask).logits
    t_sub = t_logits[..., vocab_ids]
    valid = mask.bool()
    p = torch.softmax(t_sub, -1)
    loss_tok = (p * (torch.log_softmax(t_sub, -1) - torch.log_softmax(d_logits, -1))).sum(-1)
    loss = loss_tok[valid].mean()
    agree = (vocab_ids[d_logits.argmax(-1)] == t_logits.argmax(-1))[valid].float().mean()
    return loss, float(agree)


@torch.no_grad()
def evaluate(target, drafter, seqs, vocab_ids, batch, seq_len) -> float:
    agrees, rng = [], random.Random(1)
    it = batches(list(seqs), batch, seq_len, rng)
    for _ in range(max(1, min(6, len(seqs) // batch))):
        ids, mask = next(it)
        _, agree = kl_step(target, drafter, ids, mask, vocab_ids)
        agrees.append(agree)
    return sum(agrees) / len(agrees)


def save(drafter, out: Path, record: dict) -> None:
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    tmp = out / ".model.safetensors.tmp"
    save_file(own_drafter_state(drafter), str(tmp))
    tmp.replace(out / "model.safetensors")
    cfg = drafter.config.to_dict()
    write_json_atomic(out / "config.json", cfg)
    write_shared_meta(out, SMOLLM2_REF, {"draft_vocab_size": int(drafter.draft_vocab.numel())})
    write_json_atomic(out / "training.json", record)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0, help="training wall-time budget")
    ap.add_argument("--gen-minutes", type=float, default=0.0, help="budget for generating target answers (slow on CPU)")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--draft-vocab", type=int, default=8192)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--out", type=Path, default=DRAFTER_DIR)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="1 beats 2 on a box shared with other jobs")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    t0 = time.time()
    pair = load_pair(SMOLLM2_REF, device="cpu")
    tok, target = pair.tokenizer, pair.target
    target.requires_grad_(False)
    train_files, held_files = stdlib_files(False), stdlib_files(True)
    prompts = docstring_prompts(train_files, 4000, rng)
    held_prompts = docstring_prompts(held_files, 16, random.Random(7))
    answers = generate_answers(pair, prompts, args.gen_minutes, 16, 160) if args.gen_minutes > 0 else []
    held_answers = generate_answers(pair, held_prompts, 2.0, 16, 160) if args.gen_minutes > 0 else []
    docs, held_docs = doc_chats(tok, False, args.seq_len), doc_chats(tok, True, args.seq_len)
    code = code_sequences(tok, train_files, args.seq_len)
    held_code = code_sequences(tok, held_files, args.seq_len)[:64]
    counts = Counter(t for s in answers + docs + code for t in s)
    specials = [i for i in (tok.eos_token_id, tok.bos_token_id, tok.pad_token_id) if i is not None]
    vocab = sorted(set(specials) | {t for t, _ in counts.most_common(args.draft_vocab - len(specials))})
    vocab_ids = torch.tensor(vocab[: args.draft_vocab], dtype=torch.long)
    coverage = sum(counts[t] for t in vocab) / max(1, sum(counts.values()))
    log(f"data: {len(answers)} answers, {len(docs)} doc chats, {len(code)} code chunks; vocab covers {coverage:.1%}")
    drafter = build_drafter(target, args.layers, vocab_ids)
    params = [p for n, p in drafter.named_parameters() if p.requires_grad and "lm_head" not in n]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    chat_it = batches(list(answers) * 4 + docs, args.batch, args.seq_len, rng)
    code_it = batches(list(code), args.batch, args.seq_len, rng)
    train_start, step, tokens, budget = time.time(), 0, 0, args.minutes * 60
    record: dict = {}
    while time.time() - train_start < budget:
        frac = (time.time() - train_start) / budget
        for group in opt.param_groups:
            group["lr"] = args.lr * min(1.0, (step + 1) / 20) * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))
        ids, mask = next(chat_it if step % 2 else code_it)  # half chat-formatted prose, half code
        loss, agree = kl_step(target, drafter, ids, mask, vocab_ids)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step, tokens = step + 1, tokens + int(mask.sum())
        if step % 10 == 0 or step < 4:
            log(f"step {step} tokens {tokens} loss {loss.item():.3f} top1 {agree:.3f}")
        if step % 100 == 0 or step == 2:
            record = {"step": step, "note": "checkpoint"}
            save(drafter, args.out, record)
    chat_agree = evaluate(target, drafter, held_answers + held_docs, vocab_ids, args.batch, args.seq_len)
    code_agree = evaluate(target, drafter, held_code, vocab_ids, args.batch, args.seq_len)
    record = {
        "target": SMOLLM2_REF,
        "layers": args.layers,
        "init": f"target layers 0..{args.layers - 1} and final norm; embedding borrowed; "
        "head = target head cut to the draft vocabulary",
        "draft_vocab": len(vocab_ids),
        "draft_vocab_coverage_train": round(coverage, 4),
        "data": {
            "target_greedy_answers": len(answers),
            "answer_tokens": sum(map(len, answers)),
            "pydoc_topic_chat_chunks": len(docs),
            "stdlib_code_chunks": len(code),
            "seq_len": args.seq_len,
            "mix": "1/2 chat-formatted prose (target answers x4 + pydoc topics), 1/2 stdlib code",
        },
        "steps": step,
        "batch": args.batch,
        "trained_tokens": tokens,
        "lr": args.lr,
        "setup_minutes": round((train_start - t0) / 60, 1),  # loading, optional generation, tokenizing
        "training_minutes": round((time.time() - train_start) / 60, 1),
        "hardware": f"CPU, {torch.get_num_threads()} threads, shared with other jobs",
        "held_out_top1_agreement": {"chat_prose": round(chat_agree, 4), "stdlib_code": round(code_agree, 4)},
    }
    save(drafter, args.out, record)
    log(f"done: {json.dumps(record)}")


if __name__ == "__main__":
    main()
