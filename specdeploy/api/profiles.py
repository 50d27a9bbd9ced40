"""Profile in, resolved profile out: load and resolve, `validate`, `plan`, and the shipped profiles (`profiles`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from specdeploy.errors import UsageError
from specdeploy.issues import Issue, ProfileError
from specdeploy.profile.loader import load_profile
from specdeploy.resolve.resolved import Resolved
from specdeploy.resolve.resolver import resolve

if TYPE_CHECKING:  # `validate` never needs these modules
    from specdeploy.plan.model import Plan
    from specdeploy.profile.shipped import ShippedProfile
    from specdeploy.resolve.probe import EnvironmentProbe


@dataclass(frozen=True)
class Validation:
    """The outcome for one profile file: its errors, or its warnings and skipped checks."""

    source: str
    errors: tuple[Issue, ...]
    notes: tuple[Issue, ...]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "ok": self.ok,
            "errors": [i.to_dict() for i in self.errors],
            "notes": [n.to_dict() for n in self.notes],
        }


def load_and_resolve(
    source: str, sets: tuple[str, ...] = (), *, probe: EnvironmentProbe | None = None, online: bool = False
) -> Resolved:
    """Load, validate and resolve a profile; raises ProfileError with every located error."""
    return resolve(load_profile(source, sets), probe=probe, online=online)


def validate(sources: list[str], sets: tuple[str, ...] = ()) -> list[Validation]:
    """Schema, options and every cross-field rule; nothing is fetched or probed."""
    results = []
    for source in sources:
        try:
            resolved = load_and_resolve(source, sets)
        except ProfileError as exc:
            results.append(Validation(source, tuple(exc.issues), ()))
        else:
            results.append(Validation(source, (), resolved.notes))
    return results


def plan(source: str, sets: tuple[str, ...] = ()) -> tuple[Resolved, Plan]:
    """The resolved profile and the steps a build would run (pure: nothing written)."""
    from specdeploy.plan.planner import make_plan

    resolved = load_and_resolve(source, sets)
    return resolved, make_plan(resolved)


def profiles_list() -> list[ShippedProfile]:
    from specdeploy.profile.shipped import listed

    return listed()


def profile_show(name: str) -> str:
    from specdeploy.profile.shipped import find_shipped, shipped_hint

    path = find_shipped(name)
    if path is None:
        raise UsageError(f"no shipped profile named '{name}'", hint=shipped_hint(name))
    return path.read_text()


def profile_copy(name: str, dest: Path, *, force: bool = False) -> Path:
    """Copy a shipped profile to start your own: into `dest` when it is a folder or names no .yaml/.yml file
    (created if missing), else to that file; never overwrites unless asked, and a link in the file's place is
    replaced, never written through."""
    from specdeploy._io import write_bytes_atomic
    from specdeploy.profile.shipped import find_shipped, shipped_hint

    path = find_shipped(name)
    if path is None:
        raise UsageError(f"no shipped profile named '{name}'", hint=shipped_hint(name))
    try:  # any OSError (a file in the way, read-only, a name too long) is the destination's fault
        into = dest.is_dir() or dest.suffix not in (".yaml", ".yml")  # `copy NAME dir/`: dir/NAME.yaml, created
        target = dest / path.name if into else dest
        if (target.exists() or target.is_symlink()) and not force:
            raise UsageError(f"{target} exists", hint="pass --force to overwrite")
        write_bytes_atomic(target, path.read_bytes())
    except OSError as exc:
        raise UsageError(
            f"cannot write {str(dest)[:200]}: {exc.strerror or exc}",
            hint="DEST must be a folder (or a .yaml file) in a writable place",
        ) from None
    return target
