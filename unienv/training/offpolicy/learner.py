"""One off-policy actor-critic learner for the CrossQ / DroQ / SAC family: the update step.

    learner = Learner(obs_dim, act_dim, low, high, LearnerConfig(algorithm="crossq"), device)
    action = learner.act(obs)                      # a sampled action, no gradient
    figures = learner.update(buffer.sample(256))   # one critic step (and an actor step every policy_delay)

All three are soft actor-critic (Haarnoja et al. 2018, learned temperature) with two critics and
the smaller of their values in the target; they differ in how the critics are regularized and
whether there are target networks:
- `crossq` (Bhatt et al., ICLR 2024): batch renormalization in actor and critics, no target
  network: the current and next state-actions go through the critics as one batch, so that the
  normalization sees both, and the target is the next half of that output without gradient.
  Adam's beta1 0.5, an actor step every 3 critic steps (the paper's).
- `droq` (Hiraoka et al., ICLR 2022): dropout and layer norm in the critics, Polyak-averaged
  target critics; meant for many updates per env step.
- `sac`: plain networks, Polyak-averaged target critics.

Invariants: everything lives on one device (the env's) and the update reads nothing back to the
host, so a GPU run never syncs in it; `update` returns its losses as tensors. The learner's whole
state (networks with their normalization statistics, optimizers, temperature, update count) is
`state_dict()`, which `load_state_dict` restores bit for bit.
"""

from __future__ import annotations

import dataclasses

import torch

from unienv.errors import ArgumentError
from unienv.training.offpolicy.networks import Actor, Critics

ALGORITHMS = {
    # algorithm: (normalization, target networks)
    "crossq": ("batch_renorm", False),
    "droq": ("layer_norm", True),
    "sac": ("none", True),
}


@dataclasses.dataclass
class LearnerConfig:
    """The learner's settings (train.yaml's train.learner; the defaults are CrossQ's on a CPU)."""

    algorithm: str = "crossq"  # crossq | droq | sac
    width: int = 256  # hidden units of actor and critics (CrossQ's paper: 2048 critics on a GPU)
    lr: float = 1e-3
    adam_beta1: float = 0.5  # CrossQ's; SAC's usual 0.9
    gamma: float = 0.99
    # rewards are multiplied by this before learning: soft actor-critic's entropy term is sized for
    # rewards of order 1 a step, and the legged tasks' are weight x dt (legged_gym's convention,
    # 1/50 of that at 50 Hz): their presets set 1 / dt
    reward_scale: float = 1.0
    tau: float = 0.005  # Polyak step of the target critics (droq, sac)
    policy_delay: int = 3  # critic steps per actor step
    init_alpha: float = 0.1  # the temperature's start (then learned)
    target_entropy: float | None = None  # None: -act_dim
    dropout: float = 0.01  # droq's critics
    warmup: int = 10_000  # batch renormalization: updates as plain batch norm first (crossq)

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            from unienv.errors import unknown_name

            raise unknown_name("train.learner.algorithm", self.algorithm, ALGORITHMS)
        for name in ("width", "policy_delay"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentError(f"train.learner.{name}: expected an integer >= 1, got {value!r}")
        for name in ("lr", "init_alpha", "reward_scale"):
            if not _positive(getattr(self, name)):
                raise ArgumentError(
                    f"train.learner.{name}: expected a number > 0, got {getattr(self, name)!r}"
                )
        for name in ("gamma", "tau", "adam_beta1", "dropout"):
            value = getattr(self, name)
            if not _number(value) or not 0 <= value < 1 or (name in ("gamma", "tau") and value == 0):
                raise ArgumentError(f"train.learner.{name}: expected a number in (0, 1), got {value!r}")


def _number(x) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float)) and x == x and abs(x) != float("inf")


def _positive(x) -> bool:
    return _number(x) and x > 0


class Learner:
    """The actor, the critics (and their targets where the algorithm has them), the temperature
    and their optimizers; `update` is one gradient step on a batch of transitions."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        low: torch.Tensor,
        high: torch.Tensor,
        config: LearnerConfig,
        device: torch.device | str = "cpu",
    ):
        self.config, self.device = config, torch.device(device)
        norm, self.has_targets = ALGORITHMS[config.algorithm]
        width, warmup = config.width, config.warmup
        self.actor = Actor(obs_dim, act_dim, width, low, high, norm, warmup).to(self.device)
        self.critics = Critics(obs_dim, act_dim, width, 2, norm, config.dropout, warmup).to(self.device)
        self.targets = None
        if self.has_targets:
            self.targets = Critics(obs_dim, act_dim, width, 2, norm, config.dropout, warmup).to(self.device)
            self.targets.load_state_dict(self.critics.state_dict())
            self.targets.requires_grad_(False)
        self.log_alpha = torch.tensor(float(config.init_alpha), device=self.device).log().requires_grad_()
        self.target_entropy = (
            -float(act_dim) if config.target_entropy is None else float(config.target_entropy)
        )
        betas = (config.adam_beta1, 0.999)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=config.lr, betas=betas)
        self.critic_optimizer = torch.optim.Adam(self.critics.parameters(), lr=config.lr, betas=betas)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=config.lr, betas=betas)
        self.updates = 0
        self.actor.eval()  # acting uses the running statistics; update() switches to training

    @torch.no_grad()
    def act(self, obs: torch.Tensor) -> torch.Tensor:
        """A sampled action for each observation (exploration)."""
        return self.actor(obs)[0]

    @torch.no_grad()
    def act_deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor.deterministic(obs)

    def update(self, batch: tuple[torch.Tensor, ...]) -> dict[str, torch.Tensor]:
        """One critic step on (obs, action, reward, next_obs, terminated), and an actor and
        temperature step every policy_delay updates; returns the losses (device tensors)."""
        obs, action, reward, next_obs, terminated = batch
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_action, next_log_prob = self.actor(next_obs)
        self.critics.train()
        if self.has_targets:
            q = self.critics(obs, action)
            with torch.no_grad():
                next_q = self.targets(next_obs, next_action)
        else:  # CrossQ: one batch through the critics, the next half as the target
            both = self.critics(torch.cat((obs, next_obs)), torch.cat((action, next_action)))
            q, next_q = both.chunk(2, dim=1)
            next_q = next_q.detach()
        target = self.config.reward_scale * reward + self.config.gamma * (1 - terminated) * (
            next_q.min(0).values - alpha * next_log_prob
        )
        critic_loss = (q - target).square().mean(1).sum()
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()
        if self.targets is not None:
            with torch.no_grad():
                torch._foreach_lerp_(
                    list(self.targets.parameters()), list(self.critics.parameters()), self.config.tau
                )
        figures = {"critic_loss": critic_loss.detach()}
        self.updates += 1
        if self.updates % self.config.policy_delay == 0:
            figures |= self._update_actor(obs)
        return figures

    def _update_actor(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        self.actor.train()
        self.critics.eval()
        action, log_prob = self.actor(obs)
        q = self.critics(obs, action).min(0).values
        alpha = self.log_alpha.detach().exp()
        actor_loss = (alpha * log_prob - q).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optimizer.step()
        self.actor.eval()
        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.alpha_optimizer.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.alpha_optimizer.step()
        return {"actor_loss": actor_loss.detach(), "alpha": alpha, "entropy": -log_prob.detach().mean()}

    def state_dict(self) -> dict:
        state = {
            "actor": self.actor.state_dict(),
            "critics": self.critics.state_dict(),
            "log_alpha": self.log_alpha.detach().clone(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "alpha_optimizer": self.alpha_optimizer.state_dict(),
            "updates": self.updates,
        }
        if self.targets is not None:
            state["targets"] = self.targets.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.actor.load_state_dict(state["actor"])
        self.critics.load_state_dict(state["critics"])
        if self.targets is not None:
            self.targets.load_state_dict(state["targets"])
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.alpha_optimizer.load_state_dict(state["alpha_optimizer"])
        self.updates = int(state["updates"])
