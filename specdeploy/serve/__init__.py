"""Serving a rendered repository locally (tritonserver from nvidia-pytriton) and asking it a question."""
