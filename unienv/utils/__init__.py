"""What every layer of unienv builds on, and nothing of unienv below it: array namespaces (NumPy
or torch, `arrays`), per-env random streams (`random`), the envs one call touches (`rows`), files
written atomically (`files`), bounds checked before an allocation (`limits`), PNG figures
(`plots`) and option dataclasses built from a config's mapping (`records`)."""
