"""Motion tracking: a robot imitating a reference motion (g1_tracking, BeyondMimic's terms), its
reference from unienv.motion."""
