"""Deployment: the policy's contract in its file (contract), a standalone runner on plain
mujoco and onnxruntime (runner), and the check of a contract against a robot's model."""
