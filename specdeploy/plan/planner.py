"""make_plan: (Resolved) -> Plan. Pure: no files written, nothing probed, nothing imported that is heavy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from specdeploy.plan.model import TUNE_STEP, Plan, Stage, Step
from specdeploy.plugin.registry import get_engine
from specdeploy.resolve.resolved import Resolved

if TYPE_CHECKING:  # the performance model is imported only when there is advice to give
    from specdeploy.perfmodel import Advice
    from specdeploy.profile.schema import Profile


def _fetch_steps(resolved: Resolved) -> list[Step]:
    profile = resolved.profile
    steps = [
        Step(
            "fetch.target",
            Stage.FETCH,
            f"fetch {profile.target.model}",
            action="fetch",
            params={"ref": profile.target.model, "revision": profile.target.revision, "role": "target"},
        )
    ]
    if profile.speculative.draft_model:
        steps.append(
            Step(
                "fetch.draft",
                Stage.FETCH,
                f"fetch drafter {profile.speculative.draft_model}",
                action="fetch",
                params={
                    "ref": profile.speculative.draft_model,
                    "revision": profile.speculative.draft_revision,
                    "role": "draft",
                },
            )
        )
    return steps


def needs_tune(resolved: Resolved) -> bool:
    """Whether the draft length is left to the tuner (`specdeploy.profile.rules.tunes`)."""
    from specdeploy.profile.rules import tunes

    return tunes(resolved.profile, resolved.loaded.mechanism, resolved.loaded.options)


def _tune_step(resolved: Resolved, after: tuple[str, ...]) -> list[Step]:
    if not needs_tune(resolved):
        return []
    return [
        Step(
            TUNE_STEP,
            Stage.TUNE,
            "choose K per concurrency: adopt this profile's tune result, else measure, else predict (labelled)",
            depends_on=after,
            optional=after,  # the tune never reads a fetched checkpoint: a CPU CI job predicts without fetching
            action="tune",
            params={"measure": "auto"},
            outputs=("tune/result.json", "tune/report.html", "tune/measurements.csv"),
        )
    ]


def make_plan(resolved: Resolved) -> Plan:
    """The step graph a build of this profile runs, in dependency order."""
    fetch = _fetch_steps(resolved)
    fetched = tuple(s.id for s in fetch)
    tune = _tune_step(resolved, fetched)
    engine = get_engine(resolved.profile.runtime.backend)
    build = engine.build_steps(resolved, fetched + tuple(s.id for s in tune))
    built = tuple(s.id for s in build)
    triton = engine.layouts and (not engine.serves_itself or resolved.profile.triton.layout != "auto")
    render = (
        []
        if not triton
        else [
            Step(
                "render.triton",
                Stage.RENDER,
                "render the Triton model repository",
                depends_on=built,
                action="render_triton",
                outputs=("triton/",),
            ),
            Step(
                "check.triton",
                Stage.CHECK,
                "check the repository against Triton's schema and rules",
                depends_on=("render.triton",),
                action="check_triton",
            ),
        ]
    )
    if render and resolved.profile.deploy.targets:
        render.append(
            Step(
                "render.deploy",
                Stage.RENDER,
                f"render deploy targets: {', '.join(resolved.profile.deploy.targets)}",
                depends_on=("check.triton",),
                action="render_deploy",
                params={"targets": list(resolved.profile.deploy.targets)},
            )
        )
    values = _values(resolved)
    advice = _advice(resolved, values)
    return Plan(
        resolved.loaded.name,
        (*fetch, *tune, *build, *render),
        resolved.to_dict(),
        tuple(advice.lines()) if advice else (),
        tuple(advice.records()) if advice else (),
        tuple(values),
        tuple(advice.throughput()) if advice else (),
    )


def _values(resolved: Resolved) -> list[dict[str, Any]]:
    """Every value of the resolved profile, flattened to dotted paths, with where it came from."""

    def flatten(prefix: tuple[str, ...], value: Any) -> list[tuple[tuple[str, ...], Any]]:
        if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
            return [row for k, v in value.items() for row in flatten((*prefix, k), v)]
        return [(prefix, value)]

    loaded = resolved.loaded
    return [
        {"path": ".".join(path), "value": value, "source": loaded.source_of(path)}
        for path, value in flatten((), loaded.profile.model_dump(mode="json", exclude_none=True))
    ]


def servable(profile: Profile) -> list[int]:
    """The tune's concurrencies the deployment can serve (at most serving.max_batch_size requests at once)."""
    cap = profile.serving.max_batch_size
    return [c for c in profile.tune.concurrency if c <= cap] or [cap]


def _given_where(values: list[dict[str, Any]], key: str) -> str:
    """Where the values under `key` came from (`--set`, `file:line`), for the advice to say."""
    return ", ".join(sorted({v["source"] for v in values if v["path"] == key or v["path"].startswith(key + ".")}))


def _advice(resolved: Resolved, values: list[dict[str, Any]]) -> Advice | None:
    """The performance model's prediction and the five guidelines, when model and GPU are known."""
    profile, mechanism = resolved.profile, resolved.profile.speculative.mechanism
    if resolved.target is None or resolved.gpu is None or mechanism in ("none", "auto"):
        return None
    from specdeploy.perfmodel import AcceptanceProfile, advise, drafter_names
    from specdeploy.perfmodel.context import context_text, decode_context
    from specdeploy.perfmodel.engines import engine_efficiency
    from specdeploy.plugin.registry import find

    backend = profile.runtime.backend
    line = get_engine(backend).support_line(resolved.line)
    usable = [m for m in drafter_names() if (cls := find(m)) is not None and cls.supports(backend, line)]
    return advise(
        resolved.target,
        resolved.gpu,
        mechanism,
        resolved.draft,
        candidates=usable,
        quantization=profile.target.quantization,
        tp=profile.hardware.tensor_parallel,
        concurrency=servable(profile),
        context=decode_context(profile.tune.output_len),  # the one the model tune backend predicts at
        k_max=max(1, resolved.draft_len),
        draft_lens=list(resolved.draft_lens) or None,  # what the tune tries
        clamp_to_first=resolved.clamp_rule is not None,
        context_note=context_text(profile.tune.output_len),
        eff=engine_efficiency(get_engine(backend).efficiency),
        profile=AcceptanceProfile.from_user(
            profile.tune.acceptance_al,
            profile.tune.acceptance_rates,
            where=_given_where(
                values, "tune.acceptance_rates" if profile.tune.acceptance_rates else "tune.acceptance_al"
            )
            or "profile",
        ),
    )
