"""Measurement points on Ray: each point (the requests one server answers: one K, or one mixed replay) is a Ray
task in its own placement group reserving the GPUs its TP x PP needs, so points never share a GPU and at most
`tune.parallel` run at once. Ray is imported only here, only when a tune asks for it (`specdeploy[ray]`).

The driver keeps the one JSONL checkpoint: a point's measurements are appended as it completes, so a killed
distributed tune resumes like a serial one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from specdeploy.errors import MissingDependency, UsageError
from specdeploy.tune.types import MeasureFn, Request

Group = tuple[Request, ...]


def points_of(requests: Sequence[Request]) -> list[Group]:
    """Requests grouped by the server they need: one per draft length K; a mixed replay is its own point."""
    groups: dict[str, list[Request]] = {}
    for request in requests:
        groups.setdefault(request.key if request.kind == "mixed" else f"k{request.k}", []).append(request)
    return [tuple(group) for group in groups.values()]


def run_point(measure: MeasureFn, group: Group) -> list[dict[str, Any] | str]:
    """In the Ray worker: each request's values, or its error text (a crashed run is data)."""
    out: list[dict[str, Any] | str] = []
    for request in group:
        try:
            out.append(dict(measure(request)))
        except Exception as exc:  # noqa: BLE001 - recorded and retried by the driver, as in a serial tune
            out.append(f"{type(exc).__name__}: {exc}")
    return out


class RayPool:
    """Runs point groups as Ray tasks; `gpus` per point (0: `cpus` only, e.g. the CPU reference runtime)."""

    def __init__(
        self, measure: MeasureFn, *, gpus: int, cpus: int = 1, parallel: int | str = "auto", address: str | None = None
    ) -> None:
        self.measure, self.gpus, self.cpus, self.address = measure, gpus, cpus, address
        self.cap = None if parallel == "auto" else int(parallel)

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError as exc:
            raise MissingDependency("tune --ray needs Ray", hint="pip install 'specdeploy[ray]'") from exc
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        biggest = max((n["Resources"].get("GPU", 0) for n in ray.nodes() if n.get("Alive")), default=0)
        if self.gpus > biggest:
            raise UsageError(
                f"a measurement point needs {self.gpus} GPU(s) on one node; the Ray cluster's largest "
                f"node has {biggest:g}",
                hint="lower tensor_parallel x pipeline_parallel, or add nodes",
            )
        return ray

    def run(self, groups: Sequence[Group]) -> Iterator[tuple[Group, list[dict[str, Any] | str]]]:
        """Yield (group, per-request values or error) as points complete; a dead worker fails its point."""
        ray = self._ray()
        from ray.util.placement_group import placement_group, remove_placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        task = ray.remote(run_point)
        bundle = {"CPU": self.cpus, **({"GPU": self.gpus} if self.gpus else {})}
        queue = list(groups)
        pending: dict[Any, tuple[Group, Any]] = {}
        while queue or pending:
            while queue and (self.cap is None or len(pending) < self.cap):
                group = queue.pop(0)
                pg = placement_group([bundle], strategy="STRICT_PACK")
                ref = task.options(
                    num_cpus=self.cpus,
                    num_gpus=self.gpus,
                    max_retries=0,
                    scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 0),
                ).remote(self.measure, group)
                pending[ref] = (group, pg)
            [ready], _ = ray.wait(list(pending), num_returns=1)
            group, pg = pending.pop(ready)
            try:
                results = ray.get(ready)
            except Exception as exc:  # noqa: BLE001 - the worker died (killed, OOM): every request of the point failed
                results = [f"{type(exc).__name__}: {exc}".splitlines()[0]] * len(group)
            remove_placement_group(pg)
            yield group, results
