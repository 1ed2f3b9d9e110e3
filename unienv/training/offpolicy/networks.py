"""The off-policy learner's networks: a squashed-Gaussian actor and an ensemble of Q critics, with
the normalization each algorithm of the family uses (CrossQ's batch renormalization, DroQ's layer
norm and dropout, or none for SAC).

Shapes: observations (B, obs_dim), actions (B, act_dim) in the action space's bounds. The critics
are one module holding E networks side by side (weights (E, in, out), one batched matmul per
layer), returning (E, B). The actor's deterministic action, tanh(mean) scaled to the bounds, is
what a policy file and ONNX carry: `exportable_actor` folds the batch renormalization's
running statistics into the following linear layers, so the exported network is plain linear
layers and activations.
"""

from __future__ import annotations

import math

import torch
from torch import nn


class BatchRenorm(nn.Module):
    """Batch renormalization (Ioffe 2017), as CrossQ (Bhatt et al. 2024) uses it over the last axis.

    Training: normalize by the batch's statistics; after `warmup` training calls, correct them
    towards the running statistics by r = clip(std_B / std_run, 1/r_max, r_max) and
    d = clip((mean_B - mean_run) / std_run, -d_max, d_max), both without gradient. Running
    statistics follow each batch with `momentum`. Evaluation: the running statistics alone.
    Inputs (..., B, F) normalize each leading index separately (an ensemble's members).
    """

    def __init__(
        self,
        features: int,
        leading: tuple[int, ...] = (),
        momentum: float = 0.01,
        warmup: int = 100_000,
        eps: float = 1e-3,
        r_max: float = 3.0,
        d_max: float = 5.0,
    ):
        super().__init__()
        shape = (*leading, 1, features)
        self.weight = nn.Parameter(torch.ones(shape))
        self.bias = nn.Parameter(torch.zeros(shape))
        self.register_buffer("running_mean", torch.zeros(shape))
        self.register_buffer("running_var", torch.ones(shape))
        self.momentum, self.warmup, self.eps, self.r_max, self.d_max = momentum, warmup, eps, r_max, d_max
        self.steps = 0  # a Python count (no device read to test it); saved as the module's extra state

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return (x - self.running_mean) * torch.rsqrt(
                self.running_var + self.eps
            ) * self.weight + self.bias
        # y = x * scale + shift, the statistics folded into (..., 1, F) factors: two passes over
        # the batch instead of six (this layer's cost dominates a small network's update on a CPU)
        mean = x.mean(-2, keepdim=True)
        var = (x.square().mean(-2, keepdim=True) - mean.square()).clamp_min(0.0)
        inv_std = torch.rsqrt(var + self.eps)
        if self.steps >= self.warmup:
            with torch.no_grad():
                running_std = torch.sqrt(self.running_var + self.eps)
                r = (1 / (inv_std * running_std)).clamp(1 / self.r_max, self.r_max)
                d = ((mean - self.running_mean) / running_std).clamp(-self.d_max, self.d_max)
            inv_std = inv_std * r
            shift = self.bias + self.weight * (d - mean * inv_std)
        else:
            shift = self.bias - self.weight * mean * inv_std
        with torch.no_grad():
            self.running_mean.lerp_(mean, self.momentum)
            self.running_var.lerp_(var * (x.shape[-2] / max(x.shape[-2] - 1, 1)), self.momentum)
        self.steps += 1
        return torch.addcmul(shift, x, self.weight * inv_std)

    def get_extra_state(self) -> dict:
        return {"steps": self.steps}

    def set_extra_state(self, state: dict) -> None:
        self.steps = int(state["steps"])

    def affine(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(scale, shift) of the evaluation map x -> scale * x + shift, flattened to (F,)."""
        scale = self.weight * torch.rsqrt(self.running_var + self.eps)
        return scale.flatten(), (self.bias - self.running_mean * scale).flatten()


class EnsembleLinear(nn.Module):
    """E linear layers applied side by side: (E, B, in) -> (E, B, out), one batched matmul."""

    def __init__(self, members: int, n_in: int, n_out: int):
        super().__init__()
        bound = 1 / math.sqrt(n_in)  # torch.nn.Linear's default initialization, per member
        self.weight = nn.Parameter(torch.empty(members, n_in, n_out).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(members, 1, n_out).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.baddbmm(self.bias, x, self.weight)


def _hidden_block(norm: str, width: int, leading: tuple[int, ...], dropout: float, warmup: int) -> list:
    """What follows a hidden linear layer: ReLU, then the algorithm's normalization."""
    if norm == "batch_renorm":
        return [nn.ReLU(), BatchRenorm(width, leading, warmup=warmup)]
    if norm == "layer_norm":  # DroQ: dropout, layer norm, then the activation
        return [*([nn.Dropout(dropout)] if dropout else []), nn.LayerNorm(width), nn.ReLU()]
    return [nn.ReLU()]


class Critics(nn.Module):
    """E Q-networks Q(s, a) -> (E, B), each two hidden layers of `width`."""

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        width: int,
        members: int = 2,
        norm: str = "none",
        dropout: float = 0.0,
        warmup: int = 100_000,
    ):
        super().__init__()
        lead, n_in = (members,), obs_dim + act_dim
        layers: list[nn.Module] = [BatchRenorm(n_in, lead, warmup=warmup)] if norm == "batch_renorm" else []
        for a, b in ((n_in, width), (width, width)):
            layers += [EnsembleLinear(members, a, b), *_hidden_block(norm, width, lead, dropout, warmup)]
        layers.append(EnsembleLinear(members, width, 1))
        self.net = nn.Sequential(*layers)
        self.members = members

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat((obs, action), -1).expand(self.members, -1, -1)
        return self.net(x).squeeze(-1)


class Actor(nn.Module):
    """A tanh-squashed Gaussian policy over [low, high], two hidden layers of `width`.

    LayerNorm-and-dropout (DroQ) is a critic's regularizer; the actor of DroQ and SAC is plain."""

    LOG_STD_MIN, LOG_STD_MAX = -5.0, 2.0

    def __init__(
        self,
        obs_dim: int,
        act_dim: int,
        width: int,
        low: torch.Tensor,
        high: torch.Tensor,
        norm: str = "none",
        warmup: int = 100_000,
    ):
        super().__init__()
        norm = norm if norm == "batch_renorm" else "none"
        layers: list[nn.Module] = [BatchRenorm(obs_dim, warmup=warmup)] if norm == "batch_renorm" else []
        for a, b in ((obs_dim, width), (width, width)):
            layers += [nn.Linear(a, b), *_hidden_block(norm, width, (), 0.0, warmup)]
        layers.append(nn.Linear(width, 2 * act_dim))
        self.net = nn.Sequential(*layers)
        self.register_buffer("scale", ((high - low) / 2).float())
        self.register_buffer("centre", ((high + low) / 2).float())

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(a sampled action, its log-probability (B,)), with the tanh's change of variables."""
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        log_std = self.LOG_STD_MIN + 0.5 * (self.LOG_STD_MAX - self.LOG_STD_MIN) * (torch.tanh(log_std) + 1)
        std = log_std.exp()
        u = mean + std * torch.randn_like(mean)
        squashed = torch.tanh(u)
        log_prob = (-0.5 * ((u - mean) / std).square() - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        log_prob = log_prob - torch.log(self.scale * (1 - squashed.square()) + 1e-6).sum(-1)
        return self.centre + self.scale * squashed, log_prob

    def deterministic(self, obs: torch.Tensor) -> torch.Tensor:
        mean, _ = self.net(obs).chunk(2, dim=-1)
        return self.centre + self.scale * torch.tanh(mean)


def exportable_actor(actor: Actor) -> nn.Sequential:
    """The actor's deterministic action as plain layers (Linear, ReLU, Tanh and a final Linear that
    scales to the bounds where they are not [-1, 1]), batch renormalization folded into the next
    linear layer: what unienv.training.policy saves and ONNX export writes."""
    layers: list[nn.Module] = []
    pending = None  # (scale, shift) of a BatchRenorm, to fold into the next Linear
    modules = list(actor.net)
    act_dim = modules[-1].out_features // 2
    for i, m in enumerate(modules):
        if isinstance(m, BatchRenorm):
            pending = m.affine()
        elif isinstance(m, nn.Linear):
            weight, bias = m.weight.detach(), m.bias.detach()
            if i == len(modules) - 1:  # the mean's rows only
                weight, bias = weight[:act_dim], bias[:act_dim]
            if pending is not None:
                scale, shift = pending
                weight, bias = weight * scale, bias + weight @ shift
                pending = None
            linear = nn.Linear(weight.shape[1], weight.shape[0])
            with torch.no_grad():
                linear.weight.copy_(weight)
                linear.bias.copy_(bias)
            layers.append(linear)
        elif isinstance(m, nn.ReLU):
            layers.append(nn.ReLU())
    layers.append(nn.Tanh())
    if not (torch.all(actor.scale == 1) and torch.all(actor.centre == 0)):
        out = nn.Linear(act_dim, act_dim)
        with torch.no_grad():
            out.weight.copy_(torch.diag(actor.scale))
            out.bias.copy_(actor.centre)
        layers.append(out)
    return nn.Sequential(*layers).float()
