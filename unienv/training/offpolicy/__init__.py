"""The off-policy learner of the CrossQ / DroQ / SAC family behind train.py (a preset with
`train.learner`): networks.py (actor, critics, batch renormalization), learner.py (the update),
replay.py (the buffer on the env's device), loop.py (collect and update, checkpoints), run.py
(train.py's entry: the run's files, resume, evaluation)."""
