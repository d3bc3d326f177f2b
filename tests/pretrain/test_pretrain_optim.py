"""LAMB and the warmup + polynomial-decay schedule."""

from __future__ import annotations

import pytest
import torch

from kalbert.pretrain.optim import Lamb, make_optimizer, warmup_polynomial


def test_lamb_fits_a_linear_model_and_scales_steps_by_weight_norm():
    torch.manual_seed(0)
    x = torch.randn(256, 8)
    y = x @ torch.randn(8, 1)
    model = torch.nn.Linear(8, 1)
    optimizer = make_optimizer(model, "lamb", lr=0.05, weight_decay=0.0)
    first = None
    for _ in range(300):
        loss = torch.nn.functional.mse_loss(model(x), y)
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < first / 50
    # trust ratio: the step of an adapted tensor is lr * ||w||, whatever the gradient's scale
    w = torch.nn.Parameter(torch.full((4,), 3.0))
    lamb = Lamb([w], lr=0.1, weight_decay=0.0)
    w.grad = torch.full((4,), 1e-3)
    lamb.step()
    assert (torch.full((4,), 3.0) - w).norm().item() == pytest.approx(0.1 * 6.0, rel=1e-4)


def test_no_decay_group_and_schedule():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4))
    optimizer = make_optimizer(model, "adamw", lr=1.0, weight_decay=0.01)
    assert [len(g["params"]) for g in optimizer.param_groups] == [1, 3]
    scheduler = warmup_polynomial(optimizer, warmup_steps=4, total_steps=12)
    rates = []
    for _ in range(12):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    assert rates[:4] == [0.25, 0.5, 0.75, 1.0] and rates[4] == 1.0
    assert rates[8] == pytest.approx(0.5) and scheduler.get_last_lr()[0] == 0.0


def _per_tensor_lamb(params: list[torch.Tensor], grads: list[torch.Tensor], state: list[dict], lr: float,
                     weight_decay: float, adapt: bool, beta1=0.9, beta2=0.999, eps=1e-6) -> None:
    """LAMB written tensor by tensor, straight from the paper: the reference for the foreach version."""
    for p, g, s in zip(params, grads, state, strict=True):
        s.setdefault("m", torch.zeros_like(p))
        s.setdefault("v", torch.zeros_like(p))
        s["step"] = s.get("step", 0) + 1
        s["m"].lerp_(g, 1 - beta1)
        s["v"].mul_(beta2).addcmul_(g, g, value=1 - beta2)
        update = (s["m"] / (1 - beta1 ** s["step"])) / ((s["v"] / (1 - beta2 ** s["step"])).sqrt() + eps)
        update.add_(p, alpha=weight_decay)
        ratio = p.norm() / update.norm() if adapt and p.norm() > 0 and update.norm() > 0 else 1.0
        p.sub_(update * (lr * ratio))


@pytest.mark.parametrize("adapt", [True, False])
def test_foreach_lamb_matches_the_per_tensor_reference(adapt):
    torch.manual_seed(0)
    shapes = [(64, 16), (16,), (3, 5, 7), (1,)]
    params = [torch.nn.Parameter(torch.randn(shape)) for shape in shapes]
    reference = [p.detach().clone() for p in params]
    lamb = Lamb([{"params": params, "weight_decay": 0.01, "adapt": adapt}], lr=0.01)
    state = [{} for _ in params]
    for _ in range(5):
        grads = [torch.randn(shape) for shape in shapes]
        for p, g in zip(params, grads, strict=True):
            p.grad = g.clone()
        lamb.step()
        _per_tensor_lamb(reference, grads, state, lr=0.01, weight_decay=0.01, adapt=adapt)
    assert all(torch.allclose(p.detach(), r, rtol=1e-5, atol=1e-7) for p, r in zip(params, reference, strict=True))
