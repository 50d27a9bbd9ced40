"""Parse a repository's config.pbtxt files into Triton's real ModelConfig messages (one `Model` per folder); report
problems as `file:line: message`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from specdeploy.errors import MissingDependency


@dataclass(frozen=True)
class RepoIssue:
    """One problem in a repository: a path relative to its root, a 1-based line when known, a message."""

    file: str
    line: int | None
    message: str
    col: int | None = None

    def render(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "") + (f":{self.col}" if self.line and self.col else "")
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "col": self.col, "message": self.message}


@dataclass(frozen=True)
class RepoCheck:
    """What `check-repo` found in a repository (no issues: Triton loads it)."""

    schema_version: ClassVar[int] = 1
    repo: Path
    issues: tuple[RepoIssue, ...]

    @property
    def ok(self) -> bool:
        return not self.issues

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "repo": str(self.repo),
            "issues": [i.to_dict() for i in self.issues],
        }


def line_of(text: str, needle: str, after: int = 0) -> int | None:
    """1-based line of the first occurrence of `needle` at or after character `after`."""
    at = text.find(needle, after)
    return None if at < 0 else text.count("\n", 0, at) + 1


@lru_cache(maxsize=1)
def model_config_pb2() -> Any:
    """Triton's generated `model_config_pb2`, loaded from its file: it needs only google.protobuf, while
    `import tritonclient.grpc` pulls grpc and costs about a second (docs/design/triton.md §7)."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("tritonclient")
        location = next(iter(spec.submodule_search_locations or [])) if spec else None
        path = Path(location) / "grpc" / "model_config_pb2.py" if location else None
        if path is None or not path.is_file():
            raise ImportError("tritonclient.grpc.model_config_pb2 not found")
        module_spec = importlib.util.spec_from_file_location("specdeploy_triton_model_config_pb2", path)
        module = importlib.util.module_from_spec(module_spec)  # type: ignore[arg-type]
        module_spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module
    except (ImportError, RuntimeError) as exc:
        raise MissingDependency(
            "checking config.pbtxt needs Triton's schema (tritonclient[grpc])", hint="pip install 'specdeploy[triton]'"
        ) from exc


def parse_config(text: str, file: str) -> tuple[Any | None, RepoIssue | None]:
    """`(ModelConfig, None)` or `(None, issue)`; the issue carries the parser's line:col."""
    schema = model_config_pb2()  # first: without the triton extra it says what to install (protobuf comes with it)
    from google.protobuf import text_format

    try:
        return text_format.Parse(text, schema.ModelConfig()), None
    except text_format.ParseError as exc:
        line, col = exc.GetLine(), exc.GetColumn()
        message = re.sub(r"^\d+:\d+ : ", "", str(exc))
        return None, RepoIssue(file, line if line and line > 0 else None, message, col or None)


def params(config: Any) -> dict[str, str]:
    """The `parameters` map as plain strings."""
    return {key: value.string_value for key, value in config.parameters.items()}


@dataclass
class Model:
    """One parsed model folder."""

    name: str
    file: str
    text: str
    config: Any

    @property
    def decoupled(self) -> bool:
        return bool(self.config.model_transaction_policy.decoupled)

    def line(self, needle: str) -> int | None:
        return line_of(self.text, needle)


def load_models(root: Path) -> tuple[dict[str, Model], list[RepoIssue]]:
    """Parse every `<model>/config.pbtxt`; check name = folder and a version folder."""
    models: dict[str, Model] = {}
    issues: list[RepoIssue] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        file = f"{folder.name}/config.pbtxt"
        if not (folder / "config.pbtxt").is_file():
            issues.append(RepoIssue(folder.name, None, "model folder without config.pbtxt"))
            continue
        text = (folder / "config.pbtxt").read_text(encoding="utf-8")
        config, problem = parse_config(text, file)
        if problem:
            issues.append(problem)
            continue
        assert config is not None  # parse_config returns (config, None) or (None, issue)
        model = Model(folder.name, file, text, config)
        if config.name != folder.name:
            issues.append(
                RepoIssue(
                    file,
                    model.line("name:"),
                    f"name '{config.name}' differs from its folder '{folder.name}' (Triton requires them equal)",
                )
            )
        if not any(v.is_dir() and v.name.isdigit() for v in folder.iterdir()):
            issues.append(RepoIssue(folder.name, None, "no version folder (e.g. 1/): Triton loads no version"))
        if not config.backend and not config.platform:
            issues.append(RepoIssue(file, None, "neither backend nor platform is set"))
        models[folder.name] = model
    return models, issues
