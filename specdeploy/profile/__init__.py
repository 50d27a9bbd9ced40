"""The profile language: load YAML with marks, merge `extends`, apply `--set`, validate, report every error."""
