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
