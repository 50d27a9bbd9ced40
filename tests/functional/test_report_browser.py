"""The tune report in a real headless browser (Debian's chromium; `make browser` installs it):
self-contained, styled, tables not Python dicts, every figure decoded, the prediction banner and a clamp note
visible. `--update-golden` keeps the screenshot as bench/results/report.png."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from specdeploy import api
from specdeploy.tune import run as tune_run
from specdeploy.tune.setup import setup_from
from specdeploy.tune.types import Request
from tests.helpers import write_profile

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOT = Path(__file__).parents[2] / "bench" / "results" / "report.png"
PROBE = """<script>
addEventListener('load', () => {
  const imgs = [...document.images];
  const th = document.querySelector('th');
  const clamp = document.querySelector('td .clamp');
  const out = {images: imgs.length, decoded: imgs.filter(i => i.complete && i.naturalWidth > 0).length,
    tables: document.querySelectorAll('table').length, rows: document.querySelectorAll('tbody tr').length,
    th_background: th ? getComputedStyle(th).backgroundColor : null,
    banner: (document.querySelector('.banner') || {}).textContent || '',
    banner_background: getComputedStyle(document.querySelector('.banner')).backgroundColor,
    clamp: clamp ? clamp.textContent : null, clamp_color: clamp ? getComputedStyle(clamp).color : null,
    overflow: document.documentElement.scrollWidth - innerWidth, height: document.documentElement.scrollHeight,
    external: [...document.querySelectorAll('[src]')].filter(e => !e.getAttribute('src').startsWith('data:')).length,
    text: document.body.innerText};
  const pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def clamped_report(tmp_path: Path) -> Path:
    """A performance-model tune in a world where drafting is slow alone but pays at 16: TRT-LLM 1.2 clamps."""
    profile = write_profile(
        tmp_path / "llama-eagle3.yaml",
        {
            "target": {"model": "meta-llama/Llama-3.1-8B-Instruct"},
            "hardware": {"gpu": "h200"},
            "runtime": {"trtllm_version": "1.2.1"},
            "speculative": {
                "mechanism": "eagle3",
                "draft_model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                "draft_len": "auto",
            },
            "tune": {"concurrency": [1, 4, 16, 64]},
        },
    )
    resolved = api.load_and_resolve(str(profile))
    model, _ = tune_run.make_backend("model", resolved, setup_from(resolved), tmp_path)

    def slow_drafts_alone(req: Request) -> dict[str, Any]:
        """Alone, a draft longer than 2 costs 3x the step (the cost probes see it too)."""
        values = model(req)
        if req.concurrency == 1 and req.k > 2:
            slower = {"output_token_throughput": 1 / 3, "output_token_throughput_per_user": 1 / 3, "step_s": 3.0}
            values = {**values, **{k: values[k] * f for k, f in slower.items() if k in values}}
        return values

    res = tune_run.tune_resolved(resolved, tmp_path / "art", backend="model", measure=slow_drafts_alone)
    return Path(str(res.report))


@pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (`make browser` installs it); the report is not looked at"
)
def test_the_report_reads_well_in_a_real_browser(tmp_path: Path, update_golden: bool) -> None:
    report = clamped_report(tmp_path)
    html = report.read_text()
    assert "<table" in html and not re.search(r"\{'\d+': \d+", html)  # tables, not Python dicts
    probed = report.with_name("probed.html")
    probed.write_text(html.replace("</body>", PROBE + "</body>"))
    dom = chromium("--window-size=1100,900", "--dump-dom", probe_url := probed.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom.stdout, re.S)
    assert found, f"no probe in the DOM of {probe_url}: {dom.stderr[-2000:]}"
    page = json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert page["images"] >= 6 and page["decoded"] == page["images"]  # every figure embedded and decoded
    assert page["external"] == 0  # self-contained: nothing fetched from elsewhere
    assert page["tables"] >= 2 and page["rows"] >= 4
    assert page["th_background"] not in (None, "rgba(0, 0, 0, 0)")  # styled
    assert "PREDICTED" in page["banner"] and page["banner_background"] != "rgba(0, 0, 0, 0)"
    assert page["clamp"] and "clamped" in page["clamp"] and page["clamp_color"] == "rgb(161, 61, 0)"
    assert "K clamped to 2" in page["text"] and "specdeploy tune" in page["text"]  # the note, reproduce commands
    assert page["overflow"] <= 0  # nothing wider than the window
    shot = tmp_path / "report.png"
    chromium(f"--window-size=1100,{page['height']}", f"--screenshot={shot}", report.as_uri())
    assert shot.stat().st_size > 50_000
    if update_golden:
        shutil.copyfile(shot, SCREENSHOT)
