"""Value checks beyond types and bounds, which the schema's fields name through `AfterValidator`.

Each takes a type-valid value, returns it (possibly normalised) or raises ValueError (its message is the error's).
"""

from __future__ import annotations

import re
from difflib import get_close_matches


def known_line(value: str) -> str:
    """A TensorRT-LLM release that a contract range covers (1.2.x, the 1.3 line; 1.4 marked UNKNOWN): asked of
    the engines whose release field is `trtllm_version`."""
    return _known_release("trtllm_version", value)


def known_vllm_release(value: str) -> str:
    """A vLLM release a contract table covers: asked of the engines whose release field is `vllm_version`."""
    return _known_release("vllm_version", value)


def _known_release(field: str, value: str) -> str:
    from specdeploy.plugin.registry import engines

    for engine in engines().values():
        if engine.version_field == field:
            engine.check_release(value)  # raises ValueError naming the known releases
    return value


def known_backend(value: str) -> str:
    """An installed engine (`specdeploy.engines` entry point)."""
    from specdeploy.plugin.registry import engine_names

    names = engine_names()
    if value not in names:
        raise ValueError(f"unknown backend '{value}'; installed engines: {', '.join(names)}{_close(value, names)}")
    return value


def known_layout(value: str) -> str:
    """`auto` or a Triton layout some installed engine serves."""
    from specdeploy.plugin.registry import engines

    layouts = ["auto", *dict.fromkeys(lay for e in engines().values() for lay in e.layouts)]
    if value not in layouts:
        raise ValueError(f"unknown layout '{value}'; known: {', '.join(layouts)}{_close(value, layouts)}")
    return value


def _close(value: str, known: list[str]) -> str:
    close = get_close_matches(value, known, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def draft_len(value: int | str) -> int | str:
    if isinstance(value, int) and value < 1:
        raise ValueError("draft_len must be >= 1 or 'auto' (use mechanism: none to turn speculation off)")
    return value


def schedule(value: dict[int, int] | None) -> dict[int, int] | None:
    """Concurrency lower bounds from 1 -> draft length, sorted by concurrency."""
    if value is None:
        return None
    if not value:
        raise ValueError("schedule must not be empty")
    if any(k < 1 for k in value) or any(v < 0 for v in value.values()):
        raise ValueError("schedule keys (concurrency) must be >= 1 and values (draft length) >= 0")
    if min(value) != 1:
        raise ValueError("schedule must start at concurrency 1")
    return dict(sorted(value.items()))


def parallel(value: int | str) -> int | str:
    if isinstance(value, int) and value < 1:
        raise ValueError("parallel must be >= 1 or 'auto'")
    return value


def positive_sorted(value: list[int] | None) -> list[int] | None:
    """Concurrency levels or draft-length candidates: positive, deduplicated, ascending."""
    if value is None:
        return None
    if not value or any(v < 1 for v in value):
        raise ValueError("must be a non-empty list of integers >= 1")
    return sorted(set(value))


def acceptance_al(value: dict[int, float] | None) -> dict[int, float] | None:
    """Measured mean acceptance length per draft length: K >= 1, 1 <= AL <= K + 1."""
    if value is None:
        return None
    if not value or any(k < 1 or not 1.0 <= al <= k + 1 for k, al in value.items()):
        raise ValueError(
            "acceptance_al maps a draft length K >= 1 to the mean tokens per step, "
            "1 <= AL <= K + 1 (the bonus token included)"
        )
    return dict(sorted(value.items()))


def acceptance_rates(value: list[float] | None) -> list[float] | None:
    """Per-position acceptance a_1, a_2, ...: in [0, 1] and non-increasing."""
    if value is None:
        return None
    if not value or any(not 0.0 <= a <= 1.0 for a in value) or any(b > a for a, b in zip(value, value[1:])):
        raise ValueError("acceptance_rates must be a non-empty, non-increasing list of shares in [0, 1]")
    return value


def _match(pattern: str, value: str | None, what: str) -> str | None:
    if value is not None and not re.fullmatch(pattern, value):
        raise ValueError(f"{value!r} is not {what}")
    return value


def k8s_name(value: str | None) -> str | None:
    """A DNS-1123 label (Kubernetes object, Secret, namespace names): it also keeps YAML and shell plain."""
    return _match(
        r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?",
        value,
        "a valid Kubernetes name (lowercase letters, digits and '-', at most 63, "
        "starting and ending with a letter or digit)",
    )


def k8s_key(value: str) -> str:
    """A Secret data key."""
    return _match(r"[-._a-zA-Z0-9]{1,253}", value, "a valid Secret key (letters, digits, '-', '_', '.')") or value


def label_value(value: str | None) -> str | None:
    """A Kubernetes label value (node selectors)."""
    return _match(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?", value, "a valid Kubernetes label value")


def quantity(value: str) -> str:
    """A storage quantity such as `500Gi` or `2Ti`."""
    return (
        _match(r"[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?", value, "a Kubernetes quantity (e.g. 500Gi)")
        or value
    )


def slurm_word(value: str | None) -> str | None:
    """A Slurm partition or account name."""
    return _match(r"[A-Za-z0-9_][-A-Za-z0-9_.]{0,63}", value, "a Slurm name (letters, digits, '-', '_', '.')")


def slurm_time(value: str) -> str:
    """A Slurm `--time` value."""
    return _match(r"([0-9]+-)?[0-9]{1,2}:[0-9]{2}:[0-9]{2}", value, "a Slurm time limit ([D-]HH:MM:SS)") or value


def safe_path(value: str) -> str:
    """An absolute path without spaces, quotes or shell metacharacters."""
    return _match(r"/[-A-Za-z0-9_./]*", value, "an absolute path of letters, digits, '-', '_', '.' and '/'") or value


def image_ref(value: str | None) -> str | None:
    """A container image reference (`registry/name:tag` or `name@sha256:...`)."""
    return _match(
        r"[a-z0-9][-a-zA-Z0-9._/:]*(@sha256:[0-9a-f]{64})?",
        value,
        "a container image reference (e.g. nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3)",
    )


HUB_ID = r"(?:[A-Za-z0-9_](?:[-A-Za-z0-9_.]*[A-Za-z0-9_])?/)?[A-Za-z0-9_](?:[-A-Za-z0-9_.]{0,94}[A-Za-z0-9_])?"
"""A Hugging Face repo id by huggingface_hub's `validate_repo_id` (src/huggingface_hub/utils/_validators.py
@ 0a57df9c03e6, REPO_ID_REGEX with re.ASCII): `name` or `namespace/name` of ASCII letters, digits, '-', '_', '.',
each starting and ending with a letter, digit or '_', the name at most 96 characters; and beside the regex: no
'--' or '..', no '.git' ending."""
LOCAL_PATH = r"[A-Za-z0-9_./~+@=,:][-A-Za-z0-9_./~+@=,: ]{0,4095}"


def model_ref(value: str | None) -> str | None:
    """A model (target or drafter): a hub repo id or a local folder. Anything else is refused here, once, for every
    command: the name reaches serve.sh, bench.sh and the rendered files, where a newline, `}`, `$(` or a leading
    `-` would change what they run."""
    if value is not None and not value.strip():
        raise ValueError("the model reference is empty")
    if value is None or (
        re.fullmatch(HUB_ID, value) and ".." not in value and "--" not in value and not value.endswith(".git")
    ):
        return value
    if value.startswith(("/", "./", "../", "~/")) or value.count("/") > 1:
        return _match(
            LOCAL_PATH,
            value,
            "a local folder path of letters, digits, spaces and '-', '_', '.', '/', "
            "'~', '+', '@', '=', ',', ':' (no quotes or shell characters)",
        )
    raise ValueError(
        f"{value!r} is not a Hugging Face repo id (`org/name`: letters, digits, '-', '_', '.', "
        "each part starting and ending with a letter, digit or '_', no '--' or '..') nor a local "
        "folder path (`./name`, `/path/to/name`)"
    )


def gpu_name(value: str) -> str:
    """A GPU name: a word of letters, digits, '-', '_', '.' (which GPU it is, the table or `gpu_spec` says:
    specdeploy.resolve.user_gpu)."""
    return (
        _match(
            r"[A-Za-z0-9][-A-Za-z0-9_.]{0,63}",
            value,
            "a GPU name (letters, digits, '-', '_', '.'; e.g. h200, or rtx-4090 with hardware.gpu_spec)",
        )
        or value
    )


def unique(value: list[str]) -> list[str]:
    """A list without repeats, in the given order."""
    if len(set(value)) != len(value):
        raise ValueError("names a target twice")
    return value
