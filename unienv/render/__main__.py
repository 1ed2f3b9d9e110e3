"""`python -m unienv.render`: check offscreen rendering on this machine and time it."""

from unienv.render import main

main()
