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

    .venv/bin/python tools/train_drafter.py --minutes 24                      # earlier recipe (code + pydoc)

Self-distillation (the shipped drafter, see its TRAINING.md): build instruction prompts (chat_prompts), generate
the target's greedy answers with the reference runtime into a jsonl file, then distil on prompt + answer:

    .venv/bin/python tools/train_drafter.py --answers A.jsonl --gen-minutes 11 --gen-only
    .venv/bin/python tools/train_drafter.py --answers A.jsonl --minutes 10.5 --layers 3 --lr 7e-4 \
        --init-from specdeploy/engines/reference/runtime/drafters/smollm2-135m-drafter --out /tmp/new_drafter
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import time
from collections import Counter
from pathlib import Path

import torch
from drafter_data import generate_runtime_answers, load_answers
from drafter_prompts import chat_prompts, docstring_prompts, stdlib_files, vocab_words, wide_prompts

from specdeploy._io import write_json_atomic
from specdeploy.engines.reference.runtime.models import DRAFTER_DIR, SMOLLM2_REF, load_pair
from specdeploy.engines.reference.runtime.shared_drafter import own_drafter_state, share_embeddings, write_shared_meta


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


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
            msgs = [
                {"role": "user", "content": f"Explain '{name}' in Python ({i + 1})."},
                {"role": "assistant", "content": part.strip()},
            ]
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


def answer_rows(records: list[dict], prompt_weight: float) -> list[tuple[list[int], list[float]]]:
    """prompt + answer ids, with per-position loss weights: position t predicts token t+1, so the
    positions predicting answer tokens get 1.0 and the prompt positions `prompt_weight`."""
    rows = []
    for r in records:
        ids = r["prompt_ids"] + r["answer_ids"]
        n_prompt = len(r["prompt_ids"])
        w = [prompt_weight if t + 1 < n_prompt else 1.0 for t in range(len(ids))]
        w[-1] = 0.0  # the last position predicts a token that is not in the data
        rows.append((ids, w))
    return rows


def pad_rows(rows: list[tuple[list[int], list[float]]]):
    width = max(len(ids) for ids, _ in rows)
    ids_t = torch.zeros(len(rows), width, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    weight = torch.zeros(len(rows), width)
    for r, (ids, w) in enumerate(rows):
        ids_t[r, : len(ids)] = torch.tensor(ids)
        mask[r, : len(ids)] = 1
        weight[r, : len(ids)] = torch.tensor(w)
    return ids_t, mask, weight


class TeacherCache:
    """Teacher log-probs over the draft vocabulary (fp16) and full-vocabulary argmax per answer row, computed
    once: the 30-layer teacher forward dominates a step, and the answers are seen several times."""

    def __init__(self, target, vocab_ids):
        self.target, self.vocab_ids, self.store = target, vocab_ids, {}

    @torch.no_grad()
    def get(self, keys: list[int], rows):
        todo = [i for i, k in enumerate(keys) if k not in self.store]
        if todo:
            ids, mask, _ = pad_rows([rows[i] for i in todo])
            logits = self.target(input_ids=ids, attention_mask=mask).logits
            sub = torch.log_softmax(logits[..., self.vocab_ids], -1).half()
            top = logits.argmax(-1)
            for j, i in enumerate(todo):
                n = len(rows[i][0])
                self.store[keys[i]] = (sub[j, :n].clone(), top[j, :n].clone())
        width = max(len(r[0]) for r in rows)
        logp = torch.zeros(len(rows), width, len(self.vocab_ids))
        top = torch.zeros(len(rows), width, dtype=torch.long)
        for i, k in enumerate(keys):
            lp, tp = self.store[k]
            logp[i, : lp.shape[0]] = lp.float()
            top[i, : tp.shape[0]] = tp
        return logp, top


def weighted_kl(drafter, ids, mask, weight, t_logp, t_top, vocab_ids):
    """Weighted forward KL(target || drafter) over the draft vocabulary; top-1 agreement where weight == 1."""
    d_logits = drafter(input_ids=ids, attention_mask=mask).logits
    loss_tok = (t_logp.exp() * (t_logp - torch.log_softmax(d_logits, -1))).sum(-1)
    loss = (loss_tok * weight).sum() / weight.sum().clamp_min(1e-6)
    sel = weight >= 1.0
    agree = (vocab_ids[d_logits.argmax(-1)] == t_top)[sel].float().mean() if sel.any() else torch.tensor(0.0)
    return loss, float(agree)


@torch.no_grad()
def evaluate_answers(cache, drafter, rows, vocab_ids, batch) -> float:
    """Top-1 agreement with the full target on held-out answer tokens (teacher-forced)."""
    hits = total = 0
    for i in range(0, len(rows), batch):
        chunk = rows[i : i + batch]
        keys = [("held", i + j) for j in range(len(chunk))]
        t_logp, t_top = cache.get(keys, chunk)
        ids, mask, weight = pad_rows(chunk)
        d_logits = drafter(input_ids=ids, attention_mask=mask).logits
        sel = weight >= 1.0
        hits += int((vocab_ids[d_logits.argmax(-1)] == t_top)[sel].sum())
        total += int(sel.sum())
    return hits / max(1, total)


def build_drafter(target, layers: int, vocab_ids: torch.Tensor, init_from: Path | None = None):
    from transformers import LlamaForCausalLM

    config = target.config.__class__.from_dict(target.config.to_dict())
    config.num_hidden_layers = layers
    config.tie_word_embeddings = True
    drafter = LlamaForCausalLM(config).to(torch.float32)
    for i in range(layers):
        drafter.model.layers[i].load_state_dict(target.model.layers[i].state_dict())
    drafter.model.norm.load_state_dict(target.model.norm.state_dict())
    if init_from is not None:  # layers + norm of an earlier drafter (its vocabulary is not reused)
        from safetensors.torch import load_file

        own = {
            k: v.to(torch.float32)
            for k, v in load_file(str(init_from / "model.safetensors")).items()
            if k.startswith("model.")
        }
        missing, unexpected = drafter.load_state_dict(own, strict=False)
        assert not unexpected and all("embed_tokens" in k or "lm_head" in k for k in missing), (missing, unexpected)
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
    sd = ap.add_argument_group("self-distillation on the target's own greedy answers")
    sd.add_argument(
        "--answers",
        type=Path,
        default=None,
        help="jsonl of {prompt, prompt_ids, answer_ids}; generated (appended) when --gen-minutes > 0, "
        "else read; enables the self-distillation recipe",
    )
    sd.add_argument("--gen-prompts", type=int, default=600, help="instruction prompts to build (chat_prompts)")
    sd.add_argument("--gen-max-new", type=int, default=96)
    sd.add_argument("--gen-concurrency", type=int, default=8)
    sd.add_argument("--gen-only", action="store_true", help="generate the answers file and stop")
    sd.add_argument("--gen-wide", action="store_true", help="prompts from wide_prompts instead of chat_prompts")
    sd.add_argument("--held-answers", type=int, default=16, help="last N answers held out for agreement")
    sd.add_argument("--prompt-weight", type=float, default=0.2, help="loss weight of prompt positions (answers 1.0)")
    sd.add_argument("--code-every", type=int, default=4, help="every Nth step is a stdlib-code batch (0: never)")
    sd.add_argument("--init-from", type=Path, default=None, help="start from an earlier drafter's layers and norm")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    if args.answers is not None:
        return self_distill(args)
    legacy(args)


def answer_vocab(tok, code, docs, rows, size: int) -> list[int]:
    """Every token of the target answers first, then pydoc prose (x20) and stdlib code by frequency."""
    counts = Counter(t for s in code for t in s)
    for s in docs:  # English prose: chat answers are mostly prose, the code chunks would crowd it out
        counts.update({t: 20 * c for t, c in Counter(s).items()})
    for ids, _ in rows:  # answer tokens first: the draft vocabulary must cover what the target says
        counts.update({t: 1000 for t in ids})
    specials = [i for i in (tok.eos_token_id, tok.bos_token_id, tok.pad_token_id) if i is not None]
    vocab = sorted(set(specials) | {t for t, _ in counts.most_common(size - len(specials))})
    return vocab


def self_distill_record(
    args,
    vocab_ids,
    held_cov,
    train_rec,
    held_rec,
    records,
    code,
    step,
    tokens,  # noqa: PLR0913
    answer_tokens,
    t0,
    train_start,
    train_minutes,
    answer_agree,
    code_agree,
) -> dict:
    return {
        "target": SMOLLM2_REF,
        "recipe": "self-distillation on the target's own greedy answers",
        "layers": args.layers,
        "init": (
            f"layers + norm of {args.init_from.name if args.init_from else 'the target'}"
            + ("" if args.init_from else f" (layers 0..{args.layers - 1})")
            + "; embedding borrowed; head = target head cut to the draft vocabulary"
        ),
        "draft_vocab": len(vocab_ids),
        "draft_vocab_coverage_held_out_answers": round(held_cov, 4),
        "data": {
            "prompt_source": "tools/train_drafter.py chat_prompts(): ~45% templated questions about stdlib "
            "`module.function` names and docstrings, ~55% hand-written general / writing / math / role-play "
            "questions; none from MT-Bench or HumanEval",
            "target_greedy_answers_train": len(train_rec),
            "target_greedy_answers_held_out": len(held_rec),
            "answer_tokens_train": sum(len(r["answer_ids"]) for r in train_rec),
            "max_new_tokens": max((len(r["answer_ids"]) for r in records), default=0),
            "generation": "specdeploy.engines.reference.runtime.generate(mechanism='none', concurrency=8), greedy, "
            "chat template",
            "stdlib_code_chunks": len(code),
            "mix": f"every {args.code_every}th step a stdlib-code batch, else prompt+answer batches "
            f"(answer positions weight 1.0, prompt positions {args.prompt_weight})"
            if args.code_every
            else f"prompt+answer batches only (prompt weight {args.prompt_weight})",
        },
        "steps": step,
        "batch": args.batch,
        "trained_tokens": tokens,
        "trained_answer_tokens": answer_tokens,
        "lr": args.lr,
        "setup_minutes": round((train_start - t0) / 60, 1),
        "training_minutes": round(train_minutes, 1),
        "hardware": f"CPU, {torch.get_num_threads()} threads, shared with other jobs",
        "held_out_top1_agreement": {"target_answers": round(answer_agree, 4), "stdlib_code": round(code_agree, 4)},
    }


def self_distill(args) -> None:
    """Self-distillation: forward KL to the target on prompt + the target's own greedy answer."""
    rng = random.Random(args.seed)
    t0 = time.time()
    pair = load_pair(SMOLLM2_REF, device="cpu", cpu_kernels=False)
    torch.set_num_threads(args.threads)
    tok, target = pair.tokenizer, pair.target
    target.requires_grad_(False)
    train_files, held_files = stdlib_files(False), stdlib_files(True)
    if args.gen_minutes > 0:
        prompts = (
            wide_prompts(train_files, args.gen_prompts, random.Random(args.seed), vocab_words(tok))
            if args.gen_wide
            else chat_prompts(train_files, args.gen_prompts, random.Random(args.seed))
        )
        served = load_pair(SMOLLM2_REF, device="cpu")  # the answers of the target as served (its CPU kernels)
        generate_runtime_answers(
            served, prompts, args.gen_minutes, args.gen_concurrency, args.gen_max_new, args.answers
        )
    if args.gen_only:
        return
    records = load_answers(args.answers)
    n_held = min(args.held_answers, len(records) // 8)
    train_rec, held_rec = records[: len(records) - n_held], records[len(records) - n_held :]
    rows = answer_rows(train_rec, args.prompt_weight)
    held_rows = answer_rows(held_rec, 0.0)
    code = code_sequences(tok, train_files, args.seq_len)
    held_code = code_sequences(tok, held_files, args.seq_len)[:16]
    docs = doc_chats(tok, False, args.seq_len)
    vocab = answer_vocab(tok, code, docs, rows, args.draft_vocab)
    vocab_ids = torch.tensor(vocab[: args.draft_vocab], dtype=torch.long)
    vset = set(vocab)
    ans_tokens = [t for r in held_rec for t in r["answer_ids"]]
    held_cov = sum(t in vset for t in ans_tokens) / max(1, len(ans_tokens))
    log(
        f"data: {len(rows)} train answers ({sum(len(r['answer_ids']) for r in train_rec)} answer tokens), "
        f"{len(held_rows)} held out (vocab covers {held_cov:.1%} of their tokens), {len(code)} code chunks"
    )
    drafter = build_drafter(target, args.layers, vocab_ids, args.init_from)
    params = [p for n, p in drafter.named_parameters() if p.requires_grad and "lm_head" not in n]
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    cache = TeacherCache(target, vocab_ids)
    code_it = batches(list(code), max(1, args.batch // 2), args.seq_len, rng)
    order: list[int] = []
    train_start, step, tokens, answer_tokens, budget = time.time(), 0, 0, 0, args.minutes * 60
    while time.time() - train_start < budget:
        frac = (time.time() - train_start) / budget
        for group in opt.param_groups:
            group["lr"] = args.lr * min(1.0, (step + 1) / 10) * (0.1 + 0.45 * (1 + math.cos(math.pi * frac)))
        if args.code_every and step % args.code_every == args.code_every - 1:
            ids, mask = next(code_it)
            loss, agree = kl_step(target, drafter, ids, mask, vocab_ids)
            kind = "code"
        else:
            if len(order) < args.batch:
                perm = list(range(len(rows)))
                rng.shuffle(perm)
                order += perm
            keys, order = order[: args.batch], order[args.batch :]
            chunk = [rows[k] for k in keys]
            t_logp, t_top = cache.get(keys, chunk)
            ids, mask, weight = pad_rows(chunk)
            loss, agree = weighted_kl(drafter, ids, mask, weight, t_logp, t_top, vocab_ids)
            answer_tokens += int((weight >= 1.0).sum())
            kind = "answers"
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step, tokens = step + 1, tokens + int(mask.sum())
        if step % 10 == 0 or step < 4:
            log(f"step {step} ({kind}) tokens {tokens} loss {loss.item():.3f} top1 {agree:.3f}")
        if step % 50 == 0:
            save(drafter, args.out, {"step": step, "note": "checkpoint"})
    train_minutes = (time.time() - train_start) / 60
    answer_agree = evaluate_answers(cache, drafter, held_rows, vocab_ids, args.batch)
    code_agree = evaluate(target, drafter, held_code, vocab_ids, max(1, args.batch // 2), args.seq_len)
    record = self_distill_record(
        args,
        vocab_ids,
        held_cov,
        train_rec,
        held_rec,
        records,
        code,
        step,
        tokens,
        answer_tokens,
        t0,
        train_start,
        train_minutes,
        answer_agree,
        code_agree,
    )
    save(drafter, args.out, record)
    log(f"done: {json.dumps(record)}")


def legacy(args) -> None:
    """The earlier recipe: pydoc topic chats + stdlib code (optionally HF-generated answers)."""
    rng = random.Random(args.seed)
    t0 = time.time()
    pair = load_pair(SMOLLM2_REF, device="cpu", cpu_kernels=False)
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
