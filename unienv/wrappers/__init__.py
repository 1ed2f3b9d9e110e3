"""Adapters that put a unienv VectorEnv into the RL libraries people already use.

    unienv.wrappers.sb3.Sb3VecEnv(env)          Stable-Baselines3 VecEnv (NumPy, list of infos)
    unienv.wrappers.rsl_rl.RslRlVecEnv(env)     rsl_rl VecEnv (torch on the env's device, TensorDict)
    unienv.wrappers.skrl.SkrlVecEnv(env)        skrl env Wrapper (torch on the env's device)
    unienv.wrappers.normalize                   running mean/std of observations and rewards on
                                                batched torch tensors, SAME_STEP-aware (CleanRL loops)

A CleanRL-style loop needs no adapter: a UniEnv is a Gymnasium VectorEnv with SAME_STEP autoreset,
the terminal observation in info["final_obs"] and episode statistics in info["final_info"]["episode_stats"].

Each adapter is its own module and imports its library when the module is imported, never before:
`import unienv` (and `import unienv.wrappers`) imports none of those libraries.
"""
