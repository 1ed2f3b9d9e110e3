"""The tools behind the command line: one-line errors (`cli`), sim-to-sim measurement
(`sim2sim`) and DR sweeps (`sweep`). The benchmark has its own folder, `unienv.bench`."""
