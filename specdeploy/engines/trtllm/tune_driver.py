"""Run by the trtllm backend in a subprocess (never imported by specdeploy itself): stream the dataset through
`tensorrt_llm.LLM` with `stream_interval: 1` and `enable_iter_perf_stats`, record every streamed chunk's length
(accepted = length - 1) and poll `get_stats()` during the run (its queue drains on read). UNVERIFIED: written
against docs/design/trtllm.md §8; settle on a real 1.2.1 install."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import yaml


async def _main(args: argparse.Namespace) -> None:
    from tensorrt_llm import LLM, SamplingParams

    options = yaml.safe_load(Path(args.options).read_text()) or {}
    options.update(enable_iter_perf_stats=True, stream_interval=1)
    llm = LLM(model=args.model, **options)
    records = [json.loads(line) for line in Path(args.dataset).read_text().splitlines() if line.strip()]
    chunks: list[int] = []
    by_cat: dict[str, list[int]] = {}
    stats: list = []
    sem = asyncio.Semaphore(args.concurrency)

    async def one(rec: dict) -> None:
        async with sem:
            seen = 0
            params = SamplingParams(max_tokens=int(rec["output_tokens"]), temperature=0.0)
            async for out in llm.generate_async(rec["prompt"], params, streaming=True):
                n = len(out.outputs[0].token_ids)
                if n > seen and seen > 0:  # the first chunk is the prefill's token, not a draft step
                    chunks.append(n - seen)
                    by_cat.setdefault(str(rec.get("category", "all")), []).append(n - seen)
                seen = n

    async def poll() -> None:
        while True:
            async for item in llm.get_stats_async(timeout=2):
                stats.append(json.loads(item) if isinstance(item, str) else item)
            await asyncio.sleep(0.5)

    poller = asyncio.create_task(poll())
    await asyncio.gather(*(one(r) for r in records))
    poller.cancel()
    Path(args.out).write_text(json.dumps({"chunk_lengths": chunks, "by_category": by_cat, "iteration_stats": stats}))


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("--model", "--options", "--dataset", "--out"):
        parser.add_argument(name, required=True)
    parser.add_argument("--concurrency", type=int, default=8)
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
