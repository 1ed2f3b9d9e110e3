"""Manipulation: a 7-DoF arm reaching a target (assets/arm7.xml), MuJoCo Menagerie's Franka Panda
lifting and placing its box, and the LEAP hand turning a cube."""
