"""The Plan: a pure, JSON-serializable DAG of steps computed from a resolved profile; running it is separate."""
