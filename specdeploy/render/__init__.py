"""Render Triton model repositories from a resolved profile, check them, and serve them with tritonserver.

`context` builds typed contexts, `env` is the one strict jinja environment, `writer` renders and swaps a
repository in atomically, `check*` validate against Triton's schema and load-time rules, `server` starts a
real tritonserver.
"""
