"""A GPU the built-in table lacks is described in `hardware.gpu_spec`: `validate` checks the figures (every
error located, all at once, with a hint), `hardware.gpu` and `gpu_spec` together say which GPU it is, and `plan`
labels the figures user-given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import cli, write_profile

RTX_4090 = {
    "memory_gib": 24,
    "memory_bandwidth_tb_s": 1.008,
    "bf16_tflops": 165.2,
    "fp8": True,
    "fp8_tflops": 330.3,
    "interconnect_gb_s": 64,
}


def _profile(tmp_path: Path, gpu: str, spec: dict[str, object] | None = None, **over: object) -> Path:
    hardware: dict[str, object] = {"gpu": gpu, **({"gpu_spec": spec} if spec is not None else {})}
    return write_profile(
        tmp_path / "p.yaml",
        {
            "target": {"model": "meta-llama/Llama-3.1-8B-Instruct"},
            "hardware": hardware,
            "speculative": {"mechanism": "ngram", "draft_len": 3},
            **over,
        },
    )


def test_a_described_gpu_validates_and_plan_labels_its_figures_user_given(tmp_path: Path) -> None:
    profile = _profile(tmp_path, "rtx-4090", RTX_4090)
    assert cli("validate", str(profile)).code == 0
    plan = cli("plan", str(profile))
    assert plan.code == 0, plan.err
    gpu = next(line for line in plan.out.splitlines() if line.startswith("gpu "))
    assert gpu.startswith("gpu     rtx-4090 (user-given): 24 GiB, 1.01 TB/s, 165 TFLOP/s bf16"), gpu
    assert gpu.endswith(f"[user-given: hardware.gpu_spec ({profile}:5)]"), gpu
    assert "per GPU of 24.0 GiB" in plan.out  # the fit is sized with the described memory
    resolved = json.loads(cli("plan", str(profile), "--json").out)["resolved"]
    assert resolved["gpu"] == "rtx-4090" and resolved["gpu_figures"].startswith("user-given: hardware.gpu_spec")


def test_a_table_gpu_in_plan_names_its_datasheet(tmp_path: Path) -> None:
    plan = cli("plan", str(_profile(tmp_path, "h200")))
    gpu = next(line for line in plan.out.splitlines() if line.startswith("gpu "))
    assert "[https://www.nvidia.com/en-us/data-center/h200/;" in gpu, gpu
    assert (
        json.loads(cli("plan", str(_profile(tmp_path, "h200")), "--json").out)["resolved"]["gpu_figures"]
        == "built-in table"
    )


@pytest.mark.parametrize(
    ("gpu", "suggested"),
    [("rtx-4090", "describe it under hardware.gpu_spec"), ("h100", "did you mean 'h100-sxm' or 'h100-pcie'?")],
)
def test_a_gpu_the_table_lacks_says_how_to_describe_it(tmp_path: Path, gpu: str, suggested: str) -> None:
    profile = _profile(tmp_path, gpu)
    result = cli("validate", str(profile))
    assert result.code == 2
    assert f"{profile}:4:3 hardware.gpu: specdeploy has no datasheet figures for GPU '{gpu}'" in result.err
    assert suggested in result.err and "memory_gib, memory_bandwidth_tb_s, bf16_tflops" in result.err


def test_bad_figures_are_reported_all_at_once_each_at_its_line(tmp_path: Path) -> None:
    spec = {"memory_gib": -24, "memory_bandwidth_tb_s": float("nan"), "bf16_tflops": 0, "fp8": "yes-please"}
    profile = _profile(tmp_path, "rtx-4090", spec, serving={"max_batch_size": 0})
    result = cli("validate", str(profile))
    assert result.code == 2
    for where, message in [
        ("6:5 hardware.gpu_spec.memory_gib", "greater than 0 (got -24)"),
        ("7:5 hardware.gpu_spec.memory_bandwidth_tb_s", "a finite number"),
        ("8:5 hardware.gpu_spec.bf16_tflops", "greater than 0 (got 0)"),
        ("9:5 hardware.gpu_spec.fp8", "a valid boolean"),
        ("5:3 hardware.gpu_spec.interconnect_gb_s", "Field required"),
        ("serving.max_batch_size", "greater than or equal to 1"),
    ]:
        assert where in result.err and message in result.err.split(where, 1)[1].splitlines()[0], (where, result.err)


def test_a_figure_in_the_wrong_unit_is_refused(tmp_path: Path) -> None:
    """1,008 GB/s written where TB/s goes would plan a GPU a thousand times too fast."""
    result = cli("validate", str(_profile(tmp_path, "rtx-4090", {**RTX_4090, "memory_bandwidth_tb_s": 1008})))
    assert result.code == 2 and "memory_bandwidth_tb_s: Input should be less than or equal to 100" in result.err


@pytest.mark.parametrize(
    ("gpu", "where", "message", "hint"),
    [
        ("h200", "hardware.gpu_spec", "'h200' is in the built-in GPU table", "give this GPU a name of its own"),
        ("auto", "hardware.gpu", "gpu: auto cannot be the GPU hardware.gpu_spec describes", "name it"),
        ("cpu", "hardware.gpu", "gpu: cpu cannot be the GPU hardware.gpu_spec describes", "name it"),
    ],
)
def test_gpu_and_gpu_spec_must_name_one_gpu(tmp_path: Path, gpu: str, where: str, message: str, hint: str) -> None:
    result = cli("validate", str(_profile(tmp_path, gpu, RTX_4090)))
    assert result.code == 2 and f"{where}: {message}" in result.err, result.err
    assert hint in result.err.split("hint: ", 1)[1].splitlines()[0]


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        ({"fp8_tflops": None}, "hardware.gpu_spec.fp8", "fp8: true needs fp8_tflops"),
        ({"fp8": False}, "hardware.gpu_spec.fp8_tflops", "fp8_tflops is given but fp8 is false"),
    ],
)
def test_fp8_and_its_throughput_agree(tmp_path: Path, change: dict[str, object], where: str, message: str) -> None:
    spec = {k: v for k, v in {**RTX_4090, **change}.items() if v is not None}
    result = cli("validate", str(_profile(tmp_path, "rtx-4090", spec, serving={"max_batch_size": -1})))
    assert result.code == 2 and f"{where}: {message}" in result.err, result.err
    assert "serving.max_batch_size" in result.err  # with the schema's errors, not after them


def test_a_described_gpu_without_fp8_refuses_fp8_weights(tmp_path: Path) -> None:
    spec = {**RTX_4090, "fp8": False}
    del spec["fp8_tflops"]
    profile = _profile(
        tmp_path, "rtx-3090", spec, target={"model": "meta-llama/Llama-3.1-8B-Instruct", "quantization": "fp8"}
    )
    result = cli("validate", str(profile))
    assert result.code == 2 and "target.quantization: rtx-3090 has no FP8 tensor cores" in result.err


def test_a_described_gpu_can_be_given_with_set(tmp_path: Path) -> None:
    sets = [f"--set=hardware.gpu_spec.{k}={str(v).lower()}" for k, v in RTX_4090.items()]
    result = cli("plan", str(_profile(tmp_path, "h200")), "--set", "hardware.gpu=rtx-4090", *sets)
    assert result.code == 0 and "gpu     rtx-4090 (user-given)" in result.out, result.err
    assert "[user-given: hardware.gpu_spec (--set)]" in result.out
