"""The TensorRT-LLM version table: the one place that says how each release line spells things.

Facts come from ../shared/reference/trtllm.md (§1, §2, §5); items marked unconfirmed there are
flagged here with `UNCONFIRMED` so a refresh on a real install has one place to settle them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

ScheduleSemantics = Literal["lower_bound", "upper_bound"]

#: Settle on a real 1.2.1 install (trtllm.md §11); each entry says what is assumed meanwhile.
UNCONFIRMED: dict[str, str] = {
    "1.2.eagle3_type": "decoding_type 'Eagle3' may exist in 1.2.1; we emit 'Eagle', accepted by every version",
    "1.2.ngram_match_default": "NGram max_matching_ngram_size default; we always emit it",
    "1.2.max_num_tokens_default": "TorchLlmArgs.max_num_tokens default (8192 assumed); we always emit it",
    "1.2.one_model_schedule": "draft_len_schedule/max_concurrency on one-model EAGLE-3/MTP in 1.2.1 "
                              "(#10860 likely absent); emitted anyway, may be ignored there",
    "1.2.build_plugin_flags": "the exact trtllm-build plugin flag list of 1.2.1",
    "1.2.convert_flags": "convert_checkpoint.py / quantize.py flags are taken from the 1.2 examples' READMEs",
    "1.3.dflash_fields": "DFlash/PARD/SA field names beyond max_draft_len/speculative_model (main, Mar-2026)",
}


@dataclass(frozen=True)
class VersionLine:
    """How one TensorRT-LLM release line names and interprets speculative-decoding settings."""

    name: str
    engine_backend: bool
    decoding_types: dict[str, str]
    drafter_path_key: str
    mtp_length_key: str
    schedule: ScheduleSemantics
    schedule_key_one_required: bool
    forbidden_fields: frozenset[str] = field(default_factory=frozenset)
    table: str = ""
    """Contract table (specdeploy/trtllm/tables/<table>.json) every emitted key and flag is checked against."""
    engine_modes: dict[str, str] = field(default_factory=dict)
    """mechanism -> `trtllm-build --speculative_decoding_mode` (engine backend only)."""
    no_overlap: frozenset[str] = frozenset({"draft_target", "ngram", "eagle3_two_model"})
    """Mechanisms that need `disable_overlap_scheduler: true` (two-model drafter paths)."""

    def supports(self, mechanism: str) -> bool:
        return mechanism in self.decoding_types


LINE_1_2 = VersionLine(
    name="1.2",
    engine_backend=True,
    decoding_types={
        "eagle3": "Eagle", "mtp": "MTP", "draft_target": "DraftTarget", "ngram": "NGram",
        "medusa": "Medusa", "lookahead": "Lookahead", "eagle": "Eagle", "redrafter": "ReDrafter",
        "auto": "AUTO",
    },
    drafter_path_key="speculative_model_dir",
    mtp_length_key="num_nextn_predict_layers",
    schedule="lower_bound",
    schedule_key_one_required=True,
    forbidden_fields=frozenset({
        "acceptance_rate_window_size", "acceptance_rate_threshold", "use_rejection_sampling",
        "advanced_sampling_mode", "enable_penalty", "spec_dec_variant", "moe_backend", "allow_advanced_sampling",
    }),
    table="trtllm-1.2.1",
    engine_modes={
        "draft_target": "draft_tokens_external", "lookahead": "lookahead_decoding", "medusa": "medusa",
        "redrafter": "explicit_draft_tokens", "eagle": "eagle",
    },
)

LINE_1_3 = VersionLine(
    name="1.3",
    engine_backend=False,
    decoding_types={
        "eagle3": "Eagle3", "mtp": "MTP", "draft_target": "DraftTarget", "ngram": "NGram",
        "dflash": "DFlash", "pard": "PARD", "sa": "SA", "auto": "AUTO",
    },
    drafter_path_key="speculative_model",
    mtp_length_key="max_draft_len",
    schedule="upper_bound",
    schedule_key_one_required=False,
    table="trtllm-1.3",
)

LINES = {line.name: line for line in (LINE_1_2, LINE_1_3)}

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?((?:rc|\.dev|\.post)\d+)?$")


def parse_version(text: str) -> tuple[int, int, int]:
    """`1.3.0rc2` -> (1, 3, 0); raises ValueError for anything that is not a release number."""
    match = _VERSION.match(text.strip())
    if not match:
        raise ValueError(f"'{text}' is not a TensorRT-LLM version (expected e.g. 1.2.1 or 1.3.0rc2)")
    return int(match[1]), int(match[2]), int(match[3] or 0)


def version_line(text: str) -> VersionLine:
    """Map a release number to its line; only 1.2.x and the 1.3 line (and later) are supported."""
    major, minor, _ = parse_version(text)
    if (major, minor) == (1, 2):
        return LINE_1_2
    if (major, minor) >= (1, 3):
        return LINE_1_3
    raise ValueError(f"TensorRT-LLM {text} is not supported: use 1.2.x (e.g. 1.2.1) or the 1.3 line")
