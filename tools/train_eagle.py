"""Train the EAGLE-3-style drafter for SmolLM2-135M (the reference runtime's `eagle3` mechanism).

Data: the target's own greedy answers to instruction prompts (jsonl from `tools/drafter_data.py`, whose
prompts the target samples itself, or `tools/train_drafter.py --gen-only`; none from MT-Bench or
HumanEval). Features are taken from the target exactly as it is served (the runtime's fp16-packed
kernels), by hooks on a low, a middle and a high layer; the label at position j is the target's own
argmax at j + 1, so the head learns to predict what the target will say.

Loss (training-time test, two steps as EAGLE-3 unrolls): step 1 reads the target's features; step 2
reads the head's own step-1 hidden state, as the chain does at run time. Cross-entropy over the draft
vocabulary, answer positions weight 1, prompt positions 0.2. Embedding and LM head are the target's,
frozen; fuse, fc and the one decoder layer (initialised from the target's last layer) train.

Held out: the ~1.5 % of prompts whose hash falls below HELD_PER_MILLE, whatever files are given, so data can
accumulate across sessions (`drafter_data.py` appends) and `--features` (a per-record cache) only extracts
what is new.

    .venv/bin/python tools/drafter_data.py --out A.jsonl --minutes 40 --seed 1
    .venv/bin/python tools/train_eagle.py --answers A.jsonl [--answers B.jsonl] --features F.pt --minutes 12 \
        [--init-from specdeploy/engines/reference/runtime/drafters/smollm2-135m-eagle3] --vocab answers --out OUT
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import time
from pathlib import Path

import torch

from specdeploy._io import write_json_atomic
from specdeploy.engines.reference.runtime.eagle import FeatureTap
from specdeploy.engines.reference.runtime.eagle_model import EagleHead, default_feature_layers, save_eagle
from specdeploy.engines.reference.runtime.models import DRAFTER_DIR, SMOLLM2_REF, load_pair
from specdeploy.engines.reference.runtime.shared_drafter import share_embeddings

PROMPT_WEIGHT = 0.2
STEP2_WEIGHT = 0.5
HELD_PER_MILLE = 15
"""A record is held out when its prompt hashes below this (per mille): membership depends on the record alone, so
answer files added later never move a trained-on answer into the held-out set (~1.5 %, 25 of 1,673 prompts)."""


def log(msg: str) -> None:
    print(f"[train_eagle {time.strftime('%H:%M:%S')}] {msg}", flush=True)


@torch.inference_mode()
def extract(target, layers: tuple[int, ...], records: list[dict], max_len: int) -> list[dict]:
    """Per sequence: ids, features [n, 3H] from the served target, its argmax [n], answer mask [n]."""
    tap = FeatureTap([target.model.layers[i] for i in layers])
    out = []
    try:
        for r in records:
            ids = (r["prompt_ids"] + r["answer_ids"])[:max_len]
            logits = target(input_ids=torch.tensor([ids])).logits[0]
            answer = torch.zeros(len(ids), dtype=torch.bool)
            answer[len(r["prompt_ids"]) :] = True
            out.append(
                {
                    "ids": torch.tensor(ids),
                    "feats": tap.features()[0].float().clone(),
                    "argmax": logits.argmax(-1),
                    "answer": answer,
                }
            )
    finally:
        tap.close()
    return out


def _digest(value: object) -> str:
    return hashlib.sha1(json.dumps(value).encode()).hexdigest()


def is_held(record: dict) -> bool:
    return int(_digest(record["prompt_ids"]), 16) % 1000 < HELD_PER_MILLE


def cached_features(target, layers: tuple[int, ...], records: list[dict], max_len: int, path: Path | None):
    """`extract` once per record: the cache maps (layers, max_len, record) to its features and only grows, so a
    new answers file costs only its own extraction (~0.9 s per sequence on one thread)."""
    cache = torch.load(path) if path is not None and path.is_file() else {}
    keys = [_digest([list(layers), max_len, r["prompt_ids"], r["answer_ids"]]) for r in records]
    missing = [(k, r) for k, r in zip(keys, records, strict=True) if k not in cache]
    cache.update(zip([k for k, _ in missing], extract(target, layers, [r for _, r in missing], max_len), strict=True))
    if missing and path is not None:
        torch.save(cache, path)
    log(f"features: {len(records) - len(missing)} cached, {len(missing)} extracted")
    return [cache[k] for k in keys]


def batch_tensors(seqs: list[dict], local: torch.Tensor):
    """Padded [B, n-1] inputs and labels: position j reads (x_{j+1}, f_j) and must predict argmax_{j+1}."""
    width = max(len(s["ids"]) for s in seqs) - 1
    hidden3 = seqs[0]["feats"].shape[-1]
    tokens = torch.zeros(len(seqs), width, dtype=torch.long)
    feats = torch.zeros(len(seqs), width, hidden3)
    labels = torch.full((len(seqs), width), -100, dtype=torch.long)
    weight = torch.zeros(len(seqs), width)
    mask = torch.zeros(len(seqs), width, dtype=torch.long)
    for b, s in enumerate(seqs):
        n = len(s["ids"]) - 1
        tokens[b, :n], feats[b, :n], mask[b, :n] = s["ids"][1:], s["feats"][:-1], 1
        lab = local[s["argmax"][1:]]
        labels[b, :n] = torch.where(lab >= 0, lab, -100)
        weight[b, :n] = torch.where(s["answer"][1:], 1.0, PROMPT_WEIGHT)
    return tokens, feats, labels, weight * (labels >= 0), mask


def two_steps(head: EagleHead, tokens, feats, mask):
    """Logits of step 1 (target features) and step 2 (own hidden of the previous position).

    Step 2 runs as the chain does at run time (EAGLE-3's training-time test): position j reads its own step-1
    hidden state, and attends to the step-1 keys of earlier positions (made from the target's features, as the
    runtime's cache holds them) and to itself — not to a context made of step-2 inputs everywhere."""
    e1 = head.inputs(tokens, feats, True)
    h1 = head.body.model(inputs_embeds=e1, attention_mask=mask).last_hidden_state
    own = torch.cat([torch.zeros_like(h1[:, :1]), h1[:, :-1]], 1)
    e2 = head.inputs(tokens, own, False)
    width = tokens.shape[1]
    positions = torch.arange(width).repeat(2)[None].expand(len(tokens), -1)
    both = head.body.model(
        inputs_embeds=torch.cat([e1, e2], 1), attention_mask=step2_mask(mask, e1.dtype), position_ids=positions
    ).last_hidden_state
    return head.body.lm_head(h1), head.body.lm_head(both[:, width:])


def step2_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """[B, 1, 2w, 2w] additive mask over [step-1 positions; step-2 positions]: step 1 is causal, step-2 query j
    sees step-1 keys i < j and its own key; padding is never attended."""
    width = mask.shape[1]
    i = torch.arange(width)
    causal, earlier, same = i[None, :] <= i[:, None], i[None, :] < i[:, None], i[None, :] == i[:, None]
    none = torch.zeros(width, width, dtype=torch.bool)
    allowed = torch.cat([torch.cat([causal, none], 1), torch.cat([earlier, same], 1)], 0)
    keys = mask.bool().repeat(1, 2)
    allowed = allowed[None] & keys[:, None, :] | torch.eye(2 * width, dtype=torch.bool)[None]  # no empty row
    bias = torch.zeros(allowed.shape, dtype=dtype)
    return bias.masked_fill(~allowed, torch.finfo(dtype).min)[:, None]


def loss_and_hits(logits, labels, weight):
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels.clamp(min=0), reduction="none")
    hits = ((logits.argmax(-1) == labels) & (weight >= 1.0)).sum()
    return (ce * weight).sum() / weight.sum().clamp(min=1e-6), int(hits), int((weight >= 1.0).sum())


@torch.no_grad()
def agreement(head, seqs, local, batch: int) -> tuple[float, float]:
    """Top-1 agreement with the target over every answer position: step 1, and step 2 in the run-time context.
    A target token outside the draft vocabulary counts as a miss, so vocabularies compare."""
    hits1 = hits2 = total = 0
    for i in range(0, len(seqs), batch):
        tokens, feats, labels, weight, mask = batch_tensors(seqs[i : i + batch], local)
        l1, l2 = two_steps(head, tokens, feats, mask)
        hits1, hits2 = hits1 + loss_and_hits(l1, labels, weight)[1], hits2 + loss_and_hits(l2, labels, weight)[1]
        total += sum(int(s["answer"][1:].sum()) for s in seqs[i : i + batch])
    return hits1 / max(total, 1), hits2 / max(total, 1)


def build_head(target, vocab_ids: torch.Tensor, layers: tuple[int, ...]) -> EagleHead:
    depth, hidden = target.config.num_hidden_layers, target.config.hidden_size
    config = target.config.__class__.from_dict({**target.config.to_dict(), "num_hidden_layers": 1})
    head = EagleHead(config, layers)
    head.body.model.layers[0].load_state_dict(target.model.layers[depth - 1].state_dict())
    head.body.model.norm.load_state_dict(target.model.norm.state_dict())
    with torch.no_grad():  # start as "the high layer's state, plus a little of the next token"
        head.fuse.weight.zero_()
        head.fuse.weight[:, -hidden:] = torch.eye(hidden)
        head.fc.weight.zero_()
        head.fc.weight[:, hidden:] = torch.eye(hidden)
        head.fc.weight[:, :hidden] = 0.1 * torch.eye(hidden)
    share_embeddings(head.body, target, vocab_ids)
    head.body.model.embed_tokens.weight.requires_grad_(False)
    return head


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--answers", type=Path, action="append", required=True)
    ap.add_argument("--minutes", type=float, default=12.0)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--max-len", type=int, default=320)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", default="", help="target layers to capture, e.g. 1,14,29 (default: TRT-LLM's)")
    ap.add_argument("--docs", type=int, default=0, help="also N pydoc-topic chats (the target's argmax as labels)")
    ap.add_argument("--code", type=int, default=0, help="also N chunks of CPython stdlib source (idem)")
    ap.add_argument("--features", type=Path, default=None, help="per-record cache of extracted features (grows)")
    ap.add_argument("--init-from", type=Path, default=None, help="continue from a saved head's own tensors")
    ap.add_argument(
        "--vocab",
        choices=("drafter", "answers"),
        default="drafter",
        help="draft vocabulary: the small drafter's, or that plus every token of the training answers",
    )
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    records = [json.loads(x) for p in args.answers for x in p.read_text().splitlines() if x.strip()]
    unique = list({json.dumps(r["prompt_ids"]): r for r in records}.values())
    held_rec, train_rec = [r for r in unique if is_held(r)], [r for r in unique if not is_held(r)]
    served_pair = load_pair(SMOLLM2_REF)  # features exactly as the runtime produces them
    served = served_pair.target
    depth = served.config.num_hidden_layers
    layers = tuple(int(i) for i in args.layers.split(",")) if args.layers else default_feature_layers(depth)
    if args.docs or args.code:  # the target's argmax on prose and code: more contexts to read features in
        from drafter_prompts import stdlib_files
        from train_drafter import code_sequences, doc_chats

        tok = served_pair.tokenizer
        extra = rng.sample(doc_chats(tok, False, 256), args.docs)
        extra += rng.sample(code_sequences(tok, stdlib_files(False), 256), args.code)
        train_rec += [{"prompt_ids": ids[:1], "answer_ids": ids[1:]} for ids in extra]
    t0 = time.time()
    seqs = cached_features(served, layers, train_rec + held_rec, args.max_len, args.features)
    train, held = seqs[: len(train_rec)], seqs[len(train_rec) :]
    log(f"features for {len(train)} + {len(held)} sequences in {time.time() - t0:.0f} s")
    from safetensors.torch import load_file

    vocab_ids = load_file(str(DRAFTER_DIR / "model.safetensors"))["draft_vocab_ids"].long()
    if args.vocab == "answers":  # the LM head rows are the target's (frozen): a wider vocabulary needs no init
        answered = {t for r in train_rec for t in r["answer_ids"]}
        vocab_ids = torch.tensor(sorted(answered | set(vocab_ids.tolist())), dtype=torch.long)
    log(f"draft vocabulary: {len(vocab_ids)} tokens")
    local = torch.full((served.config.vocab_size,), -1, dtype=torch.long)
    local[vocab_ids] = torch.arange(len(vocab_ids))
    fp32 = load_pair(SMOLLM2_REF, cpu_kernels=False).target
    head = build_head(fp32, vocab_ids, layers)
    if args.init_from is not None:
        own = {
            k: v.float()
            for k, v in load_file(str(args.init_from / "model.safetensors")).items()
            if not k.endswith("draft_vocab_ids")
        }
        head.load_state_dict(own, strict=False)
    params = [p for p in head.parameters() if p.requires_grad]  # the borrowed embedding and cut head are frozen
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.0)
    log(f"before: held-out agreement step1/step2 {agreement(head, held, local, args.batch)}")
    deadline, step, epoch = time.time() + args.minutes * 60, 0, 0
    while time.time() < deadline:
        rng.shuffle(train)
        for i in range(0, len(train), args.batch):
            if time.time() > deadline:
                break
            tokens, feats, labels, weight, mask = batch_tensors(train[i : i + args.batch], local)
            l1, l2 = two_steps(head, tokens, feats, mask)
            loss = loss_and_hits(l1, labels, weight)[0] + STEP2_WEIGHT * loss_and_hits(l2, labels, weight)[0]
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            step += 1
            if step % 20 == 0:
                log(f"epoch {epoch} step {step} loss {loss.item():.3f}")
        epoch += 1
        log(f"epoch {epoch}: held-out agreement step1/step2 {agreement(head, held, local, args.batch)}")
    a1, a2 = agreement(head, held, local, args.batch)
    record = {
        "data": {
            "sequences": len(train_rec),
            "pydoc_chats": args.docs,
            "stdlib_code_chunks": args.code,
            "held_out_answers": len(held_rec),
            "held_out_rule": f"sha1(prompt_ids) % 1000 < {HELD_PER_MILLE}",
            "answer_tokens_train": sum(len(r["answer_ids"]) for r in train_rec),
            "answers_files": [p.name for p in args.answers],
            "source": "the target's greedy answers to instruction prompts from tools/drafter_data.py (sampled "
            "from the target, Magpie) or tools/drafter_prompts.py (templates); no MT-Bench or "
            "HumanEval prompt",
        },
        "init_from": str(args.init_from) if args.init_from else "target's last layer",
        "draft_vocab": {"source": args.vocab, "tokens": len(vocab_ids)},
        "feature_layers": list(layers),
        "epochs": epoch,
        "steps": step,
        "minutes": args.minutes,
        "lr": args.lr,
        "held_out_top1_agreement": {
            "over": "every answer position (out-of-vocabulary = miss)",
            "step1": a1,
            "step2_run_time_context": a2,
        },
        "hardware": "CPU, 1 torch thread, shared with other jobs",
    }
    save_eagle(head, args.out, SMOLLM2_REF)
    write_json_atomic(args.out / "training.json", record)
    log(f"saved {args.out}: {record['held_out_top1_agreement']}")


if __name__ == "__main__":
    main()
