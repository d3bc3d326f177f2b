"""Metrics on hand-made arrays whose values can be checked by hand."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from kalbert.bench.metrics import best_threshold_accuracy, choice_accuracy, paired_cosine, pearson, spearman


def test_spearman_and_pearson_x100():
    # ranks 1 2 3 4 vs 1 3 2 4: d^2 sums to 2, rho = 1 - 6*2 / (4*15) = 0.8
    assert spearman([0.1, 0.2, 0.3, 0.4], [1, 3, 2, 4]) == pytest.approx(80.0)
    assert spearman([3, 2, 1], [1, 2, 3]) == pytest.approx(-100.0)
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(100.0)


def test_constant_similarity_has_no_correlation():
    assert spearman([0.5, 0.5, 0.5], [1, 2, 3]) is None
    assert pearson([0.5, 0.5, 0.5], [1, 2, 3]) is None


def test_best_threshold_accuracy():
    # sorted: .1(0) .35(1) .4(0) .8(1): cutting below .35 or below .8 gets 3 of 4; the first cut wins
    accuracy, threshold = best_threshold_accuracy([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])
    assert accuracy == pytest.approx(75.0)
    assert threshold == pytest.approx(0.225)
    assert best_threshold_accuracy([0.9, 0.8, 0.1], [1, 1, 0]) == (100.0, pytest.approx(0.45))


def test_best_threshold_never_splits_ties():
    accuracy, _ = best_threshold_accuracy([0.5, 0.5, 0.5, 0.5], [0, 1, 1, 1])
    assert accuracy == pytest.approx(75.0)  # all predicted 1: the tie cannot be cut
    accuracy, threshold = best_threshold_accuracy([0.2, 0.3], [1, 0])
    assert accuracy == pytest.approx(50.0)
    assert all(s >= threshold for s in [0.2, 0.3]) or all(s < threshold for s in [0.2, 0.3])


def test_paired_cosine_dense_sparse_and_zero_rows():
    a = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    b = np.array([[2.0, 0.0], [-1.0, -1.0], [1.0, 0.0]])
    expected = [1.0, -1.0, 0.0]
    assert paired_cosine(a, b) == pytest.approx(expected)
    assert paired_cosine(sp.csr_matrix(a), sp.csr_matrix(b)) == pytest.approx(expected)


def test_choice_accuracy_takes_the_first_of_equal_scores():
    assert choice_accuracy([[0.1, 0.9], [0.7, 0.2], [0.5, 0.5]], [1, 1, 0]) == pytest.approx(200 / 3)
