"""Optimisers and the learning-rate schedule: LAMB (ALBERT's optimiser), AdamW, warmup + polynomial decay.

LAMB (You et al. 2019) is Adam with a per-tensor trust ratio ``||w|| / ||update||`` that keeps the
step proportional to each weight's size; it is what lets ALBERT train with batches of thousands.
As in ALBERT, biases and LayerNorm weights get neither weight decay nor the trust ratio.
"""

from __future__ import annotations

import torch
from torch.optim.lr_scheduler import LambdaLR

from kalbert.errors import KalbertError

OPTIMIZERS = ("lamb", "adamw")


class Lamb(torch.optim.Optimizer):
    """LAMB with bias-corrected Adam moments; ``adapt=False`` groups take plain Adam(W) steps."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-6,
                 weight_decay: float = 0.01, adapt: bool = True) -> None:
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                                  "adapt": adapt})

    @torch.no_grad()
    def step(self, closure=None):  # noqa: D102 - torch's signature
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.lerp_(p.grad, 1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                m_hat = m / (1 - beta1 ** state["step"])
                v_hat = v / (1 - beta2 ** state["step"])
                update = m_hat / (v_hat.sqrt() + group["eps"])
                if group["weight_decay"]:
                    update.add_(p, alpha=group["weight_decay"])
                ratio = 1.0
                if group["adapt"]:
                    w_norm, u_norm = p.norm(), update.norm()
                    ratio = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
                p.sub_(update * (group["lr"] * ratio))
        return loss


def make_optimizer(model: torch.nn.Module, name: str, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    """LAMB or AdamW over ``model``'s parameters; 1-D ones (biases, LayerNorms) get no decay (nor adaptation)."""
    decay, no_decay = [], []
    for param in model.parameters():  # tied weights appear once
        if param.requires_grad:
            (no_decay if param.ndim < 2 else decay).append(param)
    if name == "lamb":
        return Lamb([{"params": decay, "weight_decay": weight_decay, "adapt": True},
                     {"params": no_decay, "weight_decay": 0.0, "adapt": False}], lr=lr)
    if name == "adamw":
        return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                  {"params": no_decay, "weight_decay": 0.0}], lr=lr, eps=1e-6)
    raise KalbertError(f"unknown optimizer {name!r}", f"use one of {', '.join(OPTIMIZERS)}")


def warmup_polynomial(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int,
                      power: float = 1.0) -> LambdaLR:
    """Linear warmup to the peak rate, then ``(1 - progress) ** power`` decay to zero at ``total_steps``."""
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return max(0.0, 1.0 - progress) ** power

    return LambdaLR(optimizer, factor)
