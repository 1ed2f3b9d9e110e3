"""Hydra's configuration (play.py, train.py), shipped as unienv.cfg: unienv.make(dr="default")
reads the DR presets in dr/ from here, wherever unienv is installed."""
