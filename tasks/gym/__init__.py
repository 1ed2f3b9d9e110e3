"""Gymnasium's suite: its MuJoCo v5 environments on their own models (same observations, rewards
and terminations; tests/tasks/test_parity.py steps them beside Gymnasium), and a cartpole on a
scene written for unienv (assets/cartpole.xml), balance or swing-up."""
