"""Training: the rsl_rl runner behind `train.py` (`runner`), checkpoints and resume
(`checkpoint`), policy files that carry no code (`policy`), their ONNX export (`export`) and a
policy's rollout on a vector env (`rollout`, play.py's and the evaluation's loop)."""
