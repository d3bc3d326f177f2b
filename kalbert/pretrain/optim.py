"""Optimisers and the learning-rate schedule: LAMB (ALBERT's optimiser), AdamW, warmup + polynomial decay.

LAMB (You et al. 2019) is Adam with a per-tensor trust ratio ``||w|| / ||update||`` that keeps the
step proportional to each weight's size; it is what lets ALBERT train with batches of thousands.
As in ALBERT, biases and LayerNorm weights get neither weight decay nor the trust ratio.
"""

from __future__ import annotations

import torch
from torch.optim.lr_scheduler import LambdaLR

from kalbert.errors import KalbertError
from kalbert.training import decay_split

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
            params = [p for p in group["params"] if p.grad is not None]
            if params:
                self._update(group, params)
        return loss

    def _update(self, group: dict, params: list[torch.Tensor]) -> None:
        """One step of ``params``; every op runs over all of them at once (``torch._foreach_*``), not per tensor."""
        beta1, beta2 = group["betas"]
        states = [self.state[p] for p in params]
        for p, state in zip(params, states, strict=True):
            if not state:
                state["step"] = 0
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
            state["step"] += 1
        grads = [p.grad for p in params]
        m, v = [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states]
        torch._foreach_lerp_(m, grads, 1 - beta1)
        torch._foreach_mul_(v, beta2)
        torch._foreach_addcmul_(v, grads, grads, value=1 - beta2)
        m_hat = torch._foreach_div(m, [1 - beta1 ** s["step"] for s in states])
        denom = torch._foreach_sqrt(torch._foreach_div(v, [1 - beta2 ** s["step"] for s in states]))
        torch._foreach_add_(denom, group["eps"])
        updates = torch._foreach_div(m_hat, denom)
        if group["weight_decay"]:
            torch._foreach_add_(updates, params, alpha=group["weight_decay"])
        scales = [group["lr"]] * len(params)
        if group["adapt"]:
            w_norms, u_norms = torch.stack(torch._foreach_norm(params)), torch.stack(torch._foreach_norm(updates))
            ratios = torch.where((w_norms > 0) & (u_norms > 0), w_norms / u_norms, 1.0)
            scales = (group["lr"] * ratios).tolist()
        torch._foreach_mul_(updates, scales)
        torch._foreach_sub_(params, updates)


def make_optimizer(model: torch.nn.Module, name: str, lr: float, weight_decay: float) -> torch.optim.Optimizer:
    """LAMB or AdamW over ``model``'s parameters; 1-D ones (biases, LayerNorms) get no decay (nor adaptation)."""
    decay, no_decay = decay_split(p for p in model.parameters() if p.requires_grad)  # tied weights appear once
    if name == "lamb":
        return Lamb([{"params": decay, "weight_decay": weight_decay, "adapt": True},
                     {"params": no_decay, "weight_decay": 0.0, "adapt": False}], lr=lr)
    if name == "adamw":
        return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                                  {"params": no_decay, "weight_decay": 0.0}], lr=lr, eps=1e-6, foreach=True)
    raise KalbertError(f"unknown optimizer {name!r}", f"use one of {', '.join(OPTIMIZERS)}")


def warmup_polynomial(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int,
                      power: float = 1.0) -> LambdaLR:
    """Linear warmup to the peak rate, then ``(1 - progress) ** power`` decay to zero at ``total_steps``.

    Not ``transformers.get_polynomial_decay_schedule_with_warmup`` (``lr_end=0``): its decay is the same, but its
    warmup gives step s the rate ``s / warmup`` where this gives ``(s + 1) / warmup``, so its first step learns
    nothing and every warmup step runs one step behind (by peak / warmup) the schedule past runs recorded.
    """
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return max(0.0, 1.0 - progress) ** power

    return LambdaLR(optimizer, factor)
