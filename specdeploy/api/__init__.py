"""One public function per CLI command, usable without click (tests and CI scripts call these).

A module per stage of the pipeline: `profiles` (load and resolve, validate, plan, the shipped profiles),
`building` (build, its dry run, verify), `tuning`, `rendering` (render, its deploy targets, check-deploy,
check-repo), `serving` (serve, ask, generate) and `installed` (doctor, mechanisms). Each keeps its heavy imports
inside its functions, so `--help`, `validate` and `plan` load no engine.
"""

from specdeploy.api.building import build, dry_run, verify
from specdeploy.api.installed import doctor, mechanisms
from specdeploy.api.profiles import (
    Validation,
    load_and_resolve,
    plan,
    profile_copy,
    profile_show,
    profiles_list,
    validate,
)
from specdeploy.api.rendering import check_deploy, check_repo, render, render_deploy
from specdeploy.api.serving import ask, generate, serve
from specdeploy.api.tuning import tune

__all__ = [
    "Validation",
    "ask",
    "build",
    "check_deploy",
    "check_repo",
    "doctor",
    "dry_run",
    "generate",
    "load_and_resolve",
    "mechanisms",
    "plan",
    "profile_copy",
    "profile_show",
    "profiles_list",
    "render",
    "render_deploy",
    "serve",
    "tune",
    "validate",
    "verify",
]
