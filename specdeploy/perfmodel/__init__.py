"""Analytic performance model of speculative decoding: step cost, acceptance, predictions, advice, calibration.

Pure functions of (ModelSpec, GpuSpec, efficiency); no GPU, no heavy imports (numpy only inside calibration).
See README.md in this folder for the API and the whatif result format.
"""

from specdeploy.perfmodel.acceptance import AcceptanceProfile
from specdeploy.perfmodel.advice import Advice, advise
from specdeploy.perfmodel.attention import plateau_draft_len, tile_aligned_draft_lens
from specdeploy.perfmodel.calibrate import Calibration, Measured, calibrate, calibrate_file, pseudo_gpu
from specdeploy.perfmodel.cost import Efficiency, StepCost, forward_cost, ridge_tokens
from specdeploy.perfmodel.drafters import DraftContext, draft_seconds, drafter_names
from specdeploy.perfmodel.predict import AnalyticTimer, ConstantTimer, Curves, Point, predict
from specdeploy.perfmodel.priors import prior_profile, published
from specdeploy.perfmodel.whatif import whatif

__all__ = [
    "AcceptanceProfile",
    "Advice",
    "AnalyticTimer",
    "Calibration",
    "ConstantTimer",
    "Curves",
    "DraftContext",
    "Efficiency",
    "Measured",
    "Point",
    "StepCost",
    "advise",
    "calibrate",
    "calibrate_file",
    "draft_seconds",
    "drafter_names",
    "forward_cost",
    "plateau_draft_len",
    "predict",
    "prior_profile",
    "pseudo_gpu",
    "published",
    "ridge_tokens",
    "tile_aligned_draft_lens",
    "whatif",
]
