"""The TensorRT-LLM contract ranges: which release range follows which rules, and where each rule was read.

A *line* (1.2, 1.3) is what plugins and the mechanism matrix speak of; inside a line the rules changed
between release candidates, so a profile's `trtllm_version` selects a *range* (`VersionLine.range`).
Every rule names its source (`sources`) or is listed in `UNCONFIRMED` and the range's `unknown`; nothing
here is guessed silently. A rule read the same at both ends of a range holds for the releases between (rc9 and
rc12 were not read); where two reads differ, the releases between them are a range of their own whose differing
rules are UNKNOWN.

Sources: NVIDIA/TensorRT-LLM docs pages under https://nvidia.github.io/TensorRT-LLM/, built from its gh-pages
branch at the commit named. `Pn` = `<release>/_modules/tensorrt_llm/llmapi/llm_args.html` of:
`P121` 1.2.1 (58fb435eacc402f3bd177e60f592c955d2b0719d), `P2` 1.3.0rc2 (8ec257a2978c14d580b1a245f7498eea37585c78),
`P8` 1.3.0rc8 (3f54ea808d2faa151e5f7a3b424bdcc0a3241c79), `P10` 1.3.0rc10 (fc76088d7ac3feaac862b3e23007469753a8d113),
`P11` 1.3.0rc11 (828c41115338b7a201bfaa595688a2f53aa5bacb), `P13` 1.3.0rc13
(0fa0042256267fa773432bc41e9e6ebc05d433ae), `P14` 1.3.0rc14 (c502768cdf4065fa028b2661ce43c0786d25d34b), `P20`
1.3.0rc20 (f67b8b9653cc98a22e197e381352422d3c43b8dd), `P22` 1.3.0rc22 (0694d640e984759d125df55bac27a19e0079fe8e),
`P23` 1.3.0rc23 (4cadc0c613b11a9fe1e1d7fea0b328b5aa727c1b). `D6`, `D7` = `<release>/features/speculative-decoding.html`
of 1.3.0rc6 (8a61efde10f96d3aedba8ff02ed8dffefd3aa809) and 1.3.0rc7 (c95d0792f1c7e31e092f8155cec29b24c96e969c);
`D27` = `1.3.0rc27/_sources/features/speculative-decoding.md.txt` (7568f407f9f5ac8202a15e401aed2708c873fa09);
`A` = docs/design/upstream-audit.md §A. The contract tables cite P121 and P23 per class.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal

ScheduleSemantics = Literal["lower_bound", "upper_bound", "unknown"]
TwoModel = Literal["supported", "deprecated", "refused", "unknown"]

#: Facts no stored source settles; each says what was read and what specdeploy does meanwhile. The one place for them.
UNCONFIRMED: dict[str, str] = {
    "1.3.rc0_rc1": "1.3.0rc0 and rc1: no llm_args page of theirs was read; their range takes 1.3.0rc2's rules (P2), "
    "and validate warns at runtime.trtllm_version",
    "1.3.schedule_rc3_rc7": "draft_len_schedule semantics of 1.3.0rc3-rc7: P2 (rc2) reads keys as lower bounds with "
    "key 1 required and schedule[1] == max_draft_len, no rule against max_concurrency; P8 (rc8), P10, P11, P13 and "
    "P14 as upper bounds (smallest key's K == max_draft_len), exclusive with max_concurrency; no llm_args page of "
    "rc3-rc7 was read, so specdeploy refuses a profile's schedule there and emits a tuned one as one K "
    "(max_draft_len, max_concurrency)",
    "1.3.mtp_rc15_rc22": "whether 1.3.0rc15-rc22 overwrite MTP max_draft_len with num_nextn_predict_layers (P14 "
    "does, P23 does not); specdeploy emits both keys equal there, which is right either way",
    "1.3.eagle3_two_model_rc24_rc26": "EAGLE-3 two-model in 1.3.0rc24-rc26 (P23: deprecated warning; rc27 "
    "signature per A: no eagle3_one_model field); refused there",
    "1.3.draft_target_alias": "whether 1.3.0rc8 and later also accept decoding_type 'DraftTarget': their classes "
    "declare Literal['Draft_Target'] (P8, P10, P11, P13, P14, P23) and DecodingBaseConfig has no from_dict map, but "
    "D7 and D27 list 'DraftTarget' for YAML and the code that parses speculative_config was not located; "
    "specdeploy emits 'Draft_Target' from rc8 ('DraftTarget' before: P2's from_dict map, D6, D7)",
    "1.3.sa_pard_since": "SA and PARD: absent from P2 (neither class nor from_dict key), not in D6's decoding types, "
    "documented in D7 (SADecodingConfig, PARDDecodingConfig; YAML 'SA', 'PARD'), classes in P8, P10, P11, P13, P14; "
    "rc3-rc7's llm_args not read, so specdeploy emits them from 1.3.0rc8",
    "1.3.fields_unread": "decoding-class fields compared per page (tables/trtllm-1.3.json bounds each field that "
    "appears, disappears or changes default): DecodingBaseConfig at P2, P8; EagleDecodingConfig at P2, P8 (its "
    "validate_eagle_config also at P13); Eagle3DecodingConfig at P2, P8, P10, P11, P13, P14, P23; MTP at P2, P8, P10 "
    "(at P11 its sa_config only); NGram at P2, P8, P14; SA at P8, P10, P11; PARD at P8 (at P10 and P11 its SA "
    "settings only); DFlash at P14; SaveState at P2, P8, P10, P13, P14. Not compared: P20 and P22 (any class); P13 "
    "for NGram, SA, MTP, PARD, Draft_Target; P14 for SA, PARD; every unread release; where a field's reads "
    "straddle unread releases, its since is the first page that shows it and its until the first page that lacks "
    "it (Eagle3 max_batch_size: P13, P23)",
    "1.3.draft_target_rc3_rc7": "decoding_type for draft/target in 1.3.0rc3-rc7: P2 takes 'DraftTarget' through its "
    "from_dict map, P8 declares Literal['Draft_Target'] with no map; where it changed is unread (D6 and D7, the "
    "rc6 and rc7 docs, list 'DraftTarget', as D27 does for releases whose code says 'Draft_Target'); specdeploy "
    "emits 'DraftTarget' there",
    "1.3.tree_topk_since_rc14": "whether 1.3.0rc14 and later still refuse a dynamic EAGLE tree without "
    "dynamic_tree_max_topK (P2, P8, P13 do; P14 and later not read for it): specdeploy refuses it only up to rc13",
    "1.4.contract": "no 1.4 release candidate was read; 1.4 profiles use the 1.3.0rc27+ contract, marked UNKNOWN",
    "1.3.dspark_since": "DSpark (DSparkDecodingConfig): absent from 1.3.0rc20 (P20: DFlashDecodingConfig is followed "
    "by AutoDecodingConfig), present in 1.3.0rc22 (P22) and rc23 (P23); 1.3.0rc21 unread (its "
    "rendered llm_args was not stored; its API reference page lists no DSparkDecodingConfig). "
    "The 1.3.0rc14-rc22 range refuses it; specdeploy emits it from 1.3.0rc23",
    "1.2.build_plugin_flags": "the exact trtllm-build plugin flag list of 1.2.1 (build.py read at 008b2b8d only)",
    "cli.serve_bench": "trtllm-serve / trtllm-bench flags come from secondary notes (docs/design/trtllm.md §4, §7); "
    "their click definitions were not read",
    "convert.qwen": "examples/models/core/qwen/convert_checkpoint.py arguments were not read (assumed as llama)",
}

ONE_MODEL_K = (
    "TensorRT-LLM 1.2.1's one-model speculative decoding does not support dynamic draft lengths "
    "(https://nvidia.github.io/TensorRT-LLM/1.2.1/features/speculative-decoding.html, section "
    "'Speculative Decoding'): it drafts max_draft_len tokens at every batch size, whatever "
    "draft_len_schedule says"
)
"""Where a 1.2 mechanism runs one-model (`declare.TrtllmDecoding.one_model`): EAGLE-3 with one_model, MTP."""

WHOLE_RANGE = frozenset({"1.3.rc0_rc1", "1.4.contract"})
"""UNCONFIRMED keys that concern every mechanism of the range (validate warns at runtime.trtllm_version); a
mechanism lists the others it concerns in its declaration (`declare.TrtllmDeclaration.unconfirmed`), and the
matrix shows them on its row."""

AUTO_DECODING = "AUTO"
"""`speculative.mechanism: auto`: TensorRT-LLM's own heuristic (the from_dict map key 'AUTO' in P121 and P2;
Literal['AUTO'] from P8 on)."""


@dataclass(frozen=True)
class VersionLine:
    """How one TensorRT-LLM release range names and checks speculative-decoding settings."""

    name: str
    """The line ("1.2", "1.3") the mechanism plugins' support tables name."""
    range: str
    """The contract range inside the line, e.g. "1.3.0rc14-rc22"."""
    low: str
    high: str | None
    """First release of the range, and the first release after it (None: open)."""
    engine_backend: bool
    drafter_path_key: str
    mtp_length_keys: tuple[str, ...]
    """Keys that carry MTP's K (both where the release overwrites max_draft_len with the other)."""
    schedule: ScheduleSemantics
    schedule_key_one_required: bool
    schedule_excludes_max_concurrency: bool
    eagle3_two_model: TwoModel
    acceptance_fields: tuple[str, str]
    sources: dict[str, str] = field(default_factory=dict)
    """Rule -> where it was read."""
    unknown: tuple[str, ...] = ()
    """UNCONFIRMED keys that concern this range."""
    forbidden_fields: frozenset[str] = field(default_factory=frozenset)
    tree_needs_topk: bool = False
    """EagleDecodingConfig.validate_eagle_config refuses a dynamic tree without dynamic_tree_max_topK (read at P2,
    P8 and P13; later releases not read for it: `1.3.tree_topk_since_rc14`)."""
    table: str = ""
    """Contract table (specdeploy/engines/trtllm/tables/<table>.json), filtered to this range by `tables.table_for`."""

    def contains(self, version: str) -> bool:
        key = version_key(version)
        return version_key(self.low) <= key and (self.high is None or key < version_key(self.high))


_ACCEPTANCE_OLD = ("acceptance_window", "acceptance_length_threshold")
_MTP_BOTH = ("num_nextn_predict_layers", "max_draft_len")

LINE_1_2 = VersionLine(
    name="1.2",
    range="1.2.x",
    low="1.2.0rc0",
    high="1.3.0rc0",
    engine_backend=True,
    drafter_path_key="speculative_model_dir",
    mtp_length_keys=("num_nextn_predict_layers",),
    schedule="lower_bound",
    schedule_key_one_required=True,
    schedule_excludes_max_concurrency=False,
    eagle3_two_model="supported",
    acceptance_fields=_ACCEPTANCE_OLD,
    sources={
        "decoding_type": "P121 update_llm_args_with_extra_dict -> DecodingBaseConfig.from_dict map (Eagle, "
        "DraftTarget, MTP, NGram, Medusa, Lookahead, SaveState, UserProvided, AUTO; no Eagle3)",
        "schedule": "P121 validate_draft_len_schedule_and_sort: key 1 required, schedule[1] == max_draft_len",
        "max_concurrency": "P121 DecodingBaseConfig (no exclusivity validator)",
        "mtp_length": "P121#MTPDecodingConfig: __init__ and from_dict set max_draft_len from num_nextn_predict_layers",
        "acceptance": "P121 DecodingBaseConfig fields",
        "eagle3_two_model": "P121 eagle3_one_model field",
    },
    unknown=("1.2.build_plugin_flags", "cli.serve_bench", "convert.qwen"),
    forbidden_fields=frozenset(
        {
            "acceptance_rate_window_size",
            "acceptance_rate_threshold",
            "use_rejection_sampling",
            "advanced_sampling_mode",
            "enable_penalty",
            "spec_dec_variant",
            "moe_backend",
        }
    ),
    table="trtllm-1.2.1",
)

_1_3 = VersionLine(
    name="1.3",
    range="",
    low="",
    high=None,
    engine_backend=False,
    drafter_path_key="speculative_model",
    mtp_length_keys=("max_draft_len",),
    schedule="upper_bound",
    schedule_key_one_required=False,
    schedule_excludes_max_concurrency=True,
    eagle3_two_model="deprecated",
    acceptance_fields=("acceptance_rate_window_size", "acceptance_rate_threshold"),
    table="trtllm-1.3",
)
_UPPER = (
    "validate_draft_len_schedule_and_sort: smallest key's K == max_draft_len; draft_len_schedule description: "
    "upper bounds"
)
_EXCL = "validate_max_concurrency_and_draft_len_schedule_mutually_exclusive"
_DT_SRC = "Literal['Draft_Target'] in P8, P10, P11, P13, P14 and P23#DraftTargetDecodingConfig; Eagle3 literal P14"
_P2 = replace(
    _1_3,
    tree_needs_topk=True,
    schedule="lower_bound",
    schedule_key_one_required=True,
    schedule_excludes_max_concurrency=False,
    mtp_length_keys=_MTP_BOTH,
    eagle3_two_model="supported",
    acceptance_fields=_ACCEPTANCE_OLD,
    sources={
        "decoding_type": "P2 update_llm_args_with_extra_dict -> DecodingBaseConfig.from_dict map (MTP, Medusa, Eagle, "
        "Eagle3, Lookahead, NGram, DraftTarget, SaveState, UserProvided, AUTO; 'Eagle' on pytorch -> Eagle3)",
        "schedule": "P2 validate_draft_len_schedule_and_sort: key 1 required, schedule[1] == max_draft_len; "
        "draft_len_schedule comment: batch_size >= key (lower bounds)",
        "max_concurrency": "P2 DecodingBaseConfig (no exclusivity validator)",
        "mtp_length": "P2 MTPDecodingConfig: __init__ and from_dict set max_draft_len from num_nextn_predict_layers",
        "acceptance": "P2 DecodingBaseConfig fields",
        "eagle3_two_model": "P2 eagle3_one_model field; validate_eagle_config warns nothing",
    },
)

RANGES: tuple[VersionLine, ...] = (
    LINE_1_2,
    replace(_P2, range="1.3.0rc0-rc1", low="1.3.0rc0", high="1.3.0rc2", unknown=("1.3.rc0_rc1", "cli.serve_bench")),
    replace(_P2, range="1.3.0rc2", low="1.3.0rc2", high="1.3.0rc3", unknown=("cli.serve_bench",)),
    replace(
        _1_3,
        range="1.3.0rc3-rc7",
        low="1.3.0rc3",
        high="1.3.0rc8",
        tree_needs_topk=True,
        schedule="unknown",
        mtp_length_keys=_MTP_BOTH,
        eagle3_two_model="supported",
        acceptance_fields=_ACCEPTANCE_OLD,
        sources={
            "decoding_type": "P2's from_dict keys NGram, MTP, AUTO, Eagle3 = the Literals of P8 and D6's, D7's YAML "
            "types; draft/target: 'DraftTarget' in P2's map, D6 and D7",
            "mtp_length": "P2 (__init__, from_dict) and P8 (set_max_total_draft_tokens) overwrite max_draft_len",
            "acceptance": "P2 and P8 DecodingBaseConfig fields",
            "eagle3_two_model": "P2 validate_eagle_config warns nothing, P8 warns deprecated: accepted at both ends",
        },
        unknown=("1.3.schedule_rc3_rc7", "1.3.draft_target_rc3_rc7", "cli.serve_bench"),
    ),
    *(
        replace(
            _1_3,
            range=f"1.3.0rc{lo}-rc{hi}",
            low=f"1.3.0rc{lo}",
            high=f"1.3.0rc{hi + 1}",
            tree_needs_topk=True,
            mtp_length_keys=_MTP_BOTH,
            acceptance_fields=_ACCEPTANCE_OLD,
            sources={
                "decoding_type": f"decoding_type Literals of {pages} (Draft_Target, NGram, MTP, SA, PARD, Eagle3, "
                "AUTO)",
                "schedule": f"{pages} " + _UPPER,
                "max_concurrency": f"{pages} " + _EXCL,
                "mtp_length": f"{pages} set_max_total_draft_tokens overwrites max_draft_len",
                "acceptance": f"{pages} DecodingBaseConfig fields",
                "eagle3_two_model": f"{pages} validate_eagle_config: deprecation warning",
                "fields": f"{pages}: SA combined with Eagle3, MTP, PARD through {sa}",
            },
            unknown=("1.3.draft_target_alias", "1.3.sa_pard_since", "1.3.fields_unread", "cli.serve_bench"),
        )
        for lo, hi, pages, sa in (
            (8, 10, "P8, P10", "use_sa_spec / sa_spec_threshold; SA has no global pool"),
            (11, 13, "P11, P13", "sa_config (SAEnhancerConfig); SA has enable_global_pool / global_pool_size"),
        )
    ),
    replace(
        _1_3,
        range="1.3.0rc14-rc22",
        low="1.3.0rc14",
        high="1.3.0rc23",
        mtp_length_keys=_MTP_BOTH,
        acceptance_fields=_ACCEPTANCE_OLD,
        sources={
            "decoding_type": _DT_SRC,
            "schedule": "P14/P23 " + _UPPER,
            "max_concurrency": "P14/P23 " + _EXCL,
            "mtp_length": "P14 set_max_total_draft_tokens overwrites max_draft_len with num_nextn_predict_layers",
            "acceptance": "P14 DecodingBaseConfig fields",
            "eagle3_two_model": "P14/P23 validate_eagle_config: deprecation warning",
        },
        unknown=("1.3.mtp_rc15_rc22", "1.3.draft_target_alias", "1.3.fields_unread", "cli.serve_bench"),
    ),
    replace(
        _1_3,
        range="1.3.0rc23-rc26",
        low="1.3.0rc23",
        high="1.3.0rc27",
        sources={
            "decoding_type": _DT_SRC,
            "schedule": "P14/P23 " + _UPPER,
            "max_concurrency": "P14/P23 " + _EXCL,
            "mtp_length": "P23 _remap_deprecated_num_nextn_predict_layers: max_draft_len wins",
            "acceptance": "P23 acceptance_rate_window_size / acceptance_rate_threshold",
            "eagle3_two_model": "P23 validate_eagle_config: deprecation warning",
        },
        unknown=("1.3.eagle3_two_model_rc24_rc26", "1.3.draft_target_alias", "1.3.dspark_since", "cli.serve_bench"),
    ),
    replace(
        _1_3,
        range="1.3.0rc27+",
        low="1.3.0rc27",
        high="1.4.0rc0",
        eagle3_two_model="refused",
        sources={
            "decoding_type": _DT_SRC + "; D27 YAML list",
            "schedule": "P14/P23 " + _UPPER,
            "max_concurrency": "P14/P23 " + _EXCL,
            "mtp_length": "P23 max_draft_len wins; D27 MTPDecodingConfig example",
            "acceptance": "A: rc27 class pages",
            "eagle3_two_model": "A: rc27 signature has no eagle3_one_model; HEAD forces one-model; PR #18721 raises",
        },
        unknown=("1.3.draft_target_alias", "cli.serve_bench"),
    ),
    replace(
        _1_3,
        range="1.4 (UNKNOWN)",
        low="1.4.0rc0",
        high="1.5.0rc0",
        eagle3_two_model="refused",
        unknown=("1.4.contract", "1.3.draft_target_alias", "cli.serve_bench"),
    ),
)

LINES = {"1.2": LINE_1_2, "1.3": RANGES[-2]}
"""The line a plugin names -> its newest read range (what the matrix and examples show)."""
LINE_1_3 = LINES["1.3"]

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:rc(\d+))?(?:\.post(\d+))?(?:\.dev\d+)?$")


def version_key(text: str) -> tuple[int, int, int, int, int]:
    """Orderable key: `1.3.0rc14` < `1.3.0rc14.post1` < `1.3.0` (a final release follows its rcs)."""
    match = _VERSION.match(text.strip())
    if not match:
        raise ValueError(f"'{text}' is not a TensorRT-LLM version (expected e.g. 1.2.1 or 1.3.0rc14)")
    rc = int(match[4]) if match[4] is not None else 10**6
    return int(match[1]), int(match[2]), int(match[3] or 0), rc, int(match[5] or 0)


def version_line(text: str) -> VersionLine:
    """The contract range of a release; only 1.2.x and the 1.3 line (1.4 marked UNKNOWN) are supported."""
    found = next((r for r in RANGES if r.contains(text)), None)
    if found is None:
        raise ValueError(f"TensorRT-LLM {text} is not supported: use 1.2.x (e.g. 1.2.1) or the 1.3 line")
    return found
