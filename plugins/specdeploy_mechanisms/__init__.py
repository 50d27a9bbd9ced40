"""specdeploy's built-in drafter mechanisms, registered through the `specdeploy.mechanisms` entry points
exactly as a third-party package would register its own."""
