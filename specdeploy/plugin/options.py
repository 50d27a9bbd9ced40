"""The pydantic side of the plugin interface, imported only when a model is needed (a profile names a mechanism
without options)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class NoOptions(BaseModel):
    """For mechanisms without options: any key is an error."""

    model_config = ConfigDict(extra="forbid")
