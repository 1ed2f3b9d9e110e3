"""The trained policies unienv ships (policy files with their deployment contracts), by name:
`python play.py policy=<name>` (unienv.training.shipped; docs/laptop.md says how each was trained)."""
