"""The engine plugin interface: what a serving engine tells specdeploy about itself.

An engine is one package (`specdeploy/engines/<pkg>/`, or a third party's) exposing `Engine` subclasses through
the `specdeploy.engines` entry-point group; `runtime.backend` names one. The core stages (profile, resolve, plan,
execute, tune, render, serve, perfmodel) reach an engine only as `registry.get_engine(profile.runtime.backend)`
and call the hooks below; they never compare backend names. Importing the class must stay light (`validate`
and `plan` import it): a hook imports its heavy modules when called.

A new engine (vLLM is the next) sets `name`, `version_field` (a `runtime.<field>` the schema declares, e.g.
`vllm_version`), `layouts` (with `triton_layout`, plugin/layout.py), `efficiency` and `tune_backend`, and overrides
`release_line`, `build_steps`, `actions` and, where it measures, `measuring` / `make_tune_backend`; an engine
that serves its artifact itself (vLLM's OpenAI server) sets `serves_itself` and overrides `start_server`. What a
mechanism emits for it is declared by the mechanism (`Mechanism.engines[<engine name>]`) in a type the engine's
package defines and reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypedDict

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

    from specdeploy.issues import Issue
    from specdeploy.plan.model import Step
    from specdeploy.plugin.base import CheckContext, Mechanism
    from specdeploy.plugin.layout import TritonLayout
    from specdeploy.profile.schema import Profile
    from specdeploy.resolve.resolved import Resolved


class RangeNote(TypedDict):
    """How a mechanism is spelled in one release range of an engine, and what differs there (the matrix)."""

    range: str
    decoding_type: str
    notes: list[str]
    unknown: list[str]
    """UNCONFIRMED keys of the range that concern the mechanism."""


@dataclass(frozen=True)
class Generation:
    """One chat answer decoded in specdeploy's process (`Engine.generate`, `specdeploy generate`)."""

    schema_version: ClassVar[int] = 1
    text: str
    tokens: list[int]
    mechanism: str
    """The mechanism that drafted (`none` when the draft length is 0)."""
    draft_len: int
    stats: dict[str, object]
    """The engine's figures of the run (tokens_per_s, acceptance_rate, ...)."""

    def to_dict(self) -> dict[str, object]:
        return {
            "schema_version": self.schema_version,
            "text": self.text,
            "tokens": self.tokens,
            "mechanism": self.mechanism,
            "draft_len": self.draft_len,
            "stats": self.stats,
        }


class ReleaseLine(Protocol):
    """What the core reads of an engine's release line; the engine's own type carries its contract rules."""

    name: str
    """The line mechanisms declare support for (`1.2`, `1.3`)."""
    range: str
    """The contract range inside the line that the profile's release selects."""


class LocalServer(Protocol):
    """An engine's own server that `specdeploy serve` runs (`Engine.start_server`), answering on 127.0.0.1."""

    process: subprocess.Popen[bytes]
    """Its main process: `serve` waits on it and records its pid."""

    def record(self) -> dict[str, object]:
        """What `serve.json` records beside the pid: `openai` (the base URL `ask` talks to), `models`, `log`, and
        `process` (a fragment of the server's command line, which tells it from a recycled pid)."""

    def log(self) -> str:
        """The server's log so far (why it exited)."""

    def stop(self) -> None:
        """Stop the server and every process it started."""


class Engine:
    """Base class of engines. Subclasses set the class variables and override the hooks they need."""

    name: ClassVar[str]
    summary: ClassVar[str] = ""
    version_field: ClassVar[str | None] = None
    """The `runtime.<field>` that names the engine's release (`trtllm_version`); None: the engine has no lines."""
    product: ClassVar[str] = ""
    """The upstream project's name as messages say it ("TensorRT-LLM")."""
    layouts: ClassVar[tuple[str, ...]] = ()
    """Triton layouts that serve this engine; the first is what `triton.layout: auto` picks. None: the plan has no
    Triton steps. An engine that `serves_itself` has them only when the profile names its layout. Each name's
    `TritonLayout` comes from `triton_layout`."""
    efficiency: ClassVar[str] = ""
    """The performance model's efficiency profile for this engine (`perfmodel.engines.ENGINES`)."""
    tune_backend: ClassVar[str | None] = None
    """The `tune --backend` name of the engine's measuring backend; None: only the performance model tunes it."""
    measures: ClassVar[str] = ""
    """What that backend runs, as messages say it ("the CPU reference runtime")."""
    cpu: ClassVar[bool] = False
    """Runs on the CPU (`hardware.gpu: cpu`); GPU engines refuse that value."""
    gpu: ClassVar[bool] = True
    """Runs on an NVIDIA GPU; a CPU-only engine refuses a named GPU."""
    local_models: ClassVar[bool] = False
    """Its models ship inside specdeploy: resolving them never goes online."""
    in_process: ClassVar[bool] = False
    """Answers a prompt in specdeploy's own process (`specdeploy generate`, `Engine.generate`)."""
    auto_mechanism: ClassVar[bool] = False
    """Has its own heuristic drafter choice (`speculative.mechanism: auto`)."""
    serves_itself: ClassVar[bool] = False
    """`specdeploy serve` of a built artifact starts the engine's own server (`start_server`), not tritonserver;
    its Triton layouts, if any, are rendered only when `triton.layout` names one (for a Triton host)."""

    def release(self, profile: Profile) -> str | None:
        """The release the profile targets (the value of `runtime.<version_field>`)."""
        return getattr(profile.runtime, self.version_field) if self.version_field else None

    def release_line(self, profile: Profile) -> Any:
        """The contract range of the profile's release (a `ReleaseLine`: its `.name` is what mechanisms' support
        names, the rest is the engine's own contract); None for an engine without release lines."""
        return None

    def check_release(self, value: str) -> None:
        """Raise ValueError naming the known releases when `value` is not one (`runtime.<version_field>`)."""

    def support_line(self, line: ReleaseLine | None) -> str | None:
        """The line name mechanisms' support tables use for this engine (the release line's by default)."""
        return line.name if line is not None else None

    def profile_issues(self, ctx: CheckContext, mechanism: Mechanism | None) -> Iterable[Issue]:
        """Rules of this engine's contract beyond the generic ones (`specdeploy.profile.rules`)."""
        return ()

    def schedule_clamp(self, line: Any) -> str | None:
        """How the release line bounds a tuned schedule, said to the user; None: it does not."""
        return None

    def range_notes(self, mechanism: str, lines: tuple[str, ...]) -> list[RangeNote]:
        """Per release range of `lines` that has `mechanism`: how it is spelled and what differs (the matrix)."""
        return []

    def check_installed(self, resolved: Resolved) -> None:
        """Before a build: refuse when the engine installed here is not the release the profile pins."""

    def preview(self, resolved: Resolved) -> dict[str, str]:
        """{name: text} of the files the emit step would write, before any fetch or tune (`build --dry-run`)."""
        return {}

    def serving_args(
        self, resolved: Resolved, *, draft_len: int, schedule: Any, max_concurrency: int | None
    ) -> dict[str, Any]:
        """What the engine's Triton layout loads the model with (TensorRT-LLM's LLM() arguments, `model.yaml`;
        vLLM's AsyncEngineArgs, `model.json`)."""
        return {}

    def serving_notes(self, resolved: Resolved, args: dict[str, Any]) -> list[str]:
        """Comment lines for the emitted serving arguments: where the engine will not do what they say."""
        return []

    def triton_layout(self, name: str) -> TritonLayout:
        """The `TritonLayout` of one of `layouts` (imports its module: rendering, checking and serving ask)."""
        raise NotImplementedError(f"the {self.name} engine has no Triton layout {name!r}")

    def triton_params(self, resolved: Resolved) -> dict[str, Any]:
        """The profile's mechanism on this engine's Triton layout: `target` (the served model's speculative
        parameters) and `draft_engine` (a second model drafts)."""
        return {}

    def repo_draft_len(self, params: dict[str, str]) -> tuple[int, str, str] | None:
        """(draft tokens, what asks for them, the parameter to point at) of a rendered model's parameters
        (`check-repo` holds them against the engine's); None when they do not say."""
        return None

    def check_serving_args(self, args: dict[str, Any], release: str) -> list[str]:
        """Problems of rendered serving arguments against the contract table of `release` (`check-repo`)."""
        return []

    def clamp_tuned(self, lower: dict[int, int], release: str) -> tuple[dict[int, int], list[str]]:
        """A tuned lower-bound schedule as the release can carry it, and notes saying what changed."""
        return lower, []

    def emitted_schedule(
        self, ranges: list[tuple[int, int, int]], max_concurrency: int, release: str
    ) -> tuple[dict[str, Any] | None, list[str]]:
        """How the release spells a tuned schedule (recorded in specdeploy.lock), and notes."""
        return None, []

    def tokenizer_folder(self, ref: str) -> str:
        """Where `transformers` loads the tokenizer of a served model named `ref` (the OpenAI chat template)."""
        return ref

    def doctor(self, probe: Any) -> tuple[dict[str, str], list[str]]:
        """(`doctor`'s lines about this engine on this machine, what a GPU build with it lacks here)."""
        return {}, []

    def generate(
        self, resolved: Resolved, prompt: str, *, mechanism: str, draft_len: int, max_tokens: int
    ) -> Generation:
        """One chat answer decoded in this process (engines with `in_process`)."""
        raise NotImplementedError(f"the {self.name} engine does not answer in specdeploy's process")

    def start_server(self, files: Path, *, name: str, port: int, log: Path, args: tuple[str, ...] = ()) -> LocalServer:
        """Start the engine's own server on 127.0.0.1:`port` (0: a free port) for `files`, the private, verified
        copy of a built artifact's files, serving the model as `name`, with the user's extra `args`; return once it
        answers requests. The caller records, waits on and stops it (`serves_itself` engines)."""
        raise NotImplementedError(f"the {self.name} engine has no server of its own: Triton serves it")

    def kv_cache_fp8(self, profile: Profile) -> bool:
        """Whether the engine stores the KV cache in FP8 for this profile (the memory fit asks)."""
        return False

    def build_steps(self, resolved: Resolved, after: tuple[str, ...]) -> list[Step]:
        """The build steps after fetch (emit, convert, compile), depending on the steps in `after`."""
        return []

    def actions(self) -> dict[str, str]:
        """Step action name -> "module:function" for the actions this engine's steps run."""
        return {}

    def measuring(self, resolved: Resolved) -> tuple[bool, str]:
        """(whether the engine's tune backend can measure on this machine, why)."""
        return False, f"the {self.name} engine has no measuring tune backend"

    def make_tune_backend(self, resolved: Resolved, setup: Any, work: Path) -> Any:
        """The measuring backend (a `MeasureFn`) for `tune --backend <tune_backend>`."""
        raise NotImplementedError(f"the {self.name} engine has no measuring tune backend")

    def check_tune_backend(self, resolved: Resolved) -> None:
        """The usage error a tune with this engine's backend would meet, raised before anything is written."""
