"""tools/refresh_trtllm_tables.py: introspects an installed llm_args (here the TEST DOUBLE
tests/fixtures/installed_trtllm) and reports what differs from the contract table of its release range."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
DOUBLE = ROOT / "tests" / "fixtures" / "installed_trtllm"
sys.path.insert(0, str(ROOT / "tools"))
from refresh_trtllm_tables import diff, introspect  # noqa: E402

from specdeploy.engines.trtllm.tables import table_for  # noqa: E402
from specdeploy.engines.trtllm.versions import version_line  # noqa: E402

RC2_SHAPE = """
    from typing import ClassVar, Optional
    from pydantic import BaseModel

    class DecodingBaseConfig(BaseModel):
        max_draft_len: Optional[int] = None

        @classmethod
        def from_dict(cls, data: dict):
            config_classes = {"DraftTarget": DraftTargetDecodingConfig, "NGram": NGramDecodingConfig}
            return config_classes[data.pop("decoding_type")](**data)

    class DraftTargetDecodingConfig(DecodingBaseConfig):
        decoding_type: ClassVar[str] = "Draft_Target"

    class NGramDecodingConfig(DecodingBaseConfig):
        decoding_type: ClassVar[str] = "NGram"
        max_matching_ngram_size: int = 0

    class KvCacheConfig(BaseModel):
        pass

    class CudaGraphConfig(BaseModel):
        pass

    class TorchLlmArgs(BaseModel):
        pass
"""
"""TEST DOUBLE of 1.3.0rc2's shape (versions.py P2): DecodingBaseConfig.from_dict maps YAML's 'DraftTarget' to a
class whose ClassVar says 'Draft_Target'."""


def _module(tmp_path: Path, source: str) -> Any:
    path = tmp_path / "rc2_llm_args.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location("rc2_llm_args", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tool(*args: str, pythonpath: list[Path]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath)), "FAKE_TENSORRT_LLM_VERSION": "1.3.0"}
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "refresh_trtllm_tables.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_diff_names_types_and_defaults() -> None:
    entry = {"fields": {"a": {"type": "int"}}}
    table = {
        "llm_args": {"same": {"type": "path"}, "gone": {"type": "int"}, "alias": {"type": "str", "alias_of": "x"}},
        "decoding_base": {"decoding_type": {"type": "str"}},
        "nested": {},
        "decoding": {"Eagle3": entry, "Old": entry},
    }
    installed = {
        "llm_args": {"same": {"type": "str"}, "new": {"type": "bool"}},
        "decoding_base": {},
        "nested": {},
        "decoding": {"Eagle3": {"fields": {"a": {"type": "float"}}}, "Draft_Target": {"fields": {}}},
    }
    assert diff(installed, table) == [
        "+ llm_args.new (bool): in the installed class, not in the table",
        "- llm_args.gone: in the table, not in the installed class",
        "+ decoding.Draft_Target: decoding_type installed, not in the table",
        "- decoding.Old: decoding_type in the table, not installed",
        "~ decoding.Eagle3.a: type int in the table, float installed",
    ]


def test_tool_reports_the_installed_double_against_its_range() -> None:
    result = _tool("--json", pythonpath=[DOUBLE, ROOT])
    assert result.returncode == 1, result.stderr
    lines = json.loads(result.stdout)
    assert "+ llm_args.skip_tokenizer_init (bool): in the installed class, not in the table" in lines
    assert "~ cuda_graph_config.max_batch_size: default 128 in the table, 0 installed" in lines
    assert "- decoding.DFlash: decoding_type in the table, not installed" in lines
    assert not [line for line in lines if "Draft_Target" in line or "decoding_base" in line]  # these agree


def test_tool_without_tensorrt_llm_exits_2() -> None:
    result = _tool(pythonpath=[ROOT])
    assert result.returncode == 2 and "not importable" in result.stderr


def test_a_from_dict_release_is_compared_by_its_yaml_keys(tmp_path: Path) -> None:
    """1.3.0rc2 reads `decoding_type` through from_dict's map: the tool compares 'DraftTarget' (the key YAML takes),
    not the class attribute 'Draft_Target', and finds the n-gram default of the rc2 range."""
    installed = introspect(_module(tmp_path, RC2_SHAPE))
    assert sorted(installed["decoding"]) == ["DraftTarget", "NGram"]
    lines = diff(installed, table_for(version_line("1.3.0rc2")))
    assert not [line for line in lines if "Draft" in line or "max_matching_ngram_size" in line], lines
    assert "- decoding.MTP: decoding_type in the table, not installed" in lines
