"""Task metrics against hand-computed values."""

import numpy as np
import pytest

from albert_tf.training import metrics


def test_classification_metrics():
    labels = np.array([1, 1, 0, 0, 1, 0])
    logits = np.array([[0, 1], [1, 0], [1, 0], [0, 1], [0, 1], [1, 0]], np.float32)
    result = metrics.classification_metrics(logits, labels)
    # predictions 1,0,0,1,1,0: tp=2 fp=1 fn=1 tn=2
    assert result["accuracy"] == pytest.approx(4 / 6)
    assert result["f1"] == pytest.approx(2 / 3)
    assert result["matthews_corr"] == pytest.approx((2 * 2 - 1 * 1) / 9)


def test_matthews_degenerate_is_zero():
    assert metrics.matthews_corrcoef([1, 1, 1], [0, 1, 1]) == 0.0


def test_pearson_spearman():
    x = [1.0, 2.0, 3.0, 4.0, 5.0]
    y = [1.0, 4.0, 9.0, 16.0, 100.0]
    assert metrics.spearman(x, y) == pytest.approx(1.0)
    assert metrics.pearson(x, [2 * v + 1 for v in x]) == pytest.approx(1.0)
    assert 0.7 < metrics.pearson(x, y) < 0.9
    # ties are averaged like scipy.stats.rankdata
    np.testing.assert_allclose(metrics._ranks([3, 1, 3, 2]), [3.5, 1.0, 3.5, 2.0])
    result = metrics.regression_metrics([1, 2, 3], [1, 2, 3])
    assert result["pearson_spearman"] == pytest.approx(1.0)


def test_squad_em_f1():
    assert metrics.squad_exact("The Eiffel Tower!", "eiffel tower") == 1.0
    assert metrics.squad_f1("in the Eiffel Tower", "Eiffel Tower") == pytest.approx(0.8)
    result = metrics.squad_metrics({"q1": "Paris", "q2": "a cat"},
                                   {"q1": ["paris", "Paris, France"], "q2": ["the dog"]})
    assert result["exact_match"] == pytest.approx(50.0)
    assert result["f1"] == pytest.approx(50.0)
    # SQuAD 2.0: unanswerable question predicted empty
    assert metrics.squad_metrics({"q": ""}, {"q": []})["exact_match"] == 100.0


def test_metric_aliases():
    assert metrics.metric_key("mcc") == "matthews_corr"
    assert metrics.metric_key("accuracy") == "accuracy"
    assert metrics.metric_key("pearson_spearman") == "pearson_spearman"
