"""The draft-length tuner: setup -> backend (the performance model, or an engine's measuring one) -> strategy
-> schedule -> result.json, report, specdeploy.lock (see README.md)."""
