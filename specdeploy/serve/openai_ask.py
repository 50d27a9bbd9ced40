"""`specdeploy ask` of an OpenAI-compatible server (an engine's own, such as vLLM's): one chat turn, greedy,
streamed as server-sent events and joined (the OpenAI chat completions API, `stream: true`)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from specdeploy.errors import StepFailed
from specdeploy.serve.client import Answer, Scalar


def ask_chat(url: str, model: str, prompt: str, *, max_tokens: int = 64, timeout: float = 300.0) -> Answer:
    """The answer's outputs: `text_output`, `finish_reason`, `chunks` (the streamed pieces that carried text) and
    the server's token counts (`prompt_tokens`, `completion_tokens`)."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    request = urllib.request.Request(
        f"{url}/v1/chat/completions",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Accept": "text/event-stream"},
    )
    pieces: list[str] = []
    reason: str | None = None
    usage: dict[str, Any] = {}
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            for raw in response:
                line = raw.decode("utf-8").strip()
                if not line.startswith("data:") or line == "data: [DONE]":
                    continue
                event = json.loads(line[5:])
                for choice in event.get("choices") or []:
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        pieces.append(text)
                    reason = choice.get("finish_reason") or reason
                usage = event.get("usage") or usage
    except urllib.error.HTTPError as exc:
        raise StepFailed(
            f"request to {model} at {url} failed: HTTP {exc.code}: {exc.read().decode('utf-8', 'replace')[:500]}"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise StepFailed(f"request to {model} at {url} failed: {getattr(exc, 'reason', exc)}") from None
    outputs: dict[str, Scalar | list[Scalar]] = {"text_output": "".join(pieces), "chunks": len(pieces)}
    if reason:
        outputs["finish_reason"] = reason
    outputs.update({k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens") if k in usage})
    return Answer(model, outputs)
