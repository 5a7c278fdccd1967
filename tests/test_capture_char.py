"""The character n-gram head of the offline capture classifier: the shipped weights, read as trained."""

import numpy as np
import pytest

from forgemem.capture.classify.learned import CATEGORIES, CHAR_NGRAMS, char_ngrams, load_char_head

TEXTS = ["also btw we always tag every resource with `cost-center` here", "im on windows so no bash pls",
         "Über-cool  dont   use npm!!", "x", "", "k thx"]


def test_char_ngrams_are_scikit_learns_char_wb():
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
    analyzer = sklearn_text.TfidfVectorizer(analyzer="char_wb", ngram_range=CHAR_NGRAMS).build_analyzer()
    for text in TEXTS:
        assert char_ngrams(text) == analyzer(text), text


def test_the_head_computes_what_training_fitted():
    """TF-IDF (sublinear tf, L2 norm) with the shipped vocabulary and idf, then the two logistic regressions,
    computed here with scikit-learn: the hand-written inference must give the same numbers."""
    sklearn_text = pytest.importorskip("sklearn.feature_extraction.text")
    head = load_char_head()
    vocabulary = dict(head.index)
    tfidf = sklearn_text.TfidfVectorizer(analyzer=char_ngrams, vocabulary=vocabulary, sublinear_tf=True)
    tfidf.idf_ = head.idf
    x = tfidf.transform(TEXTS)
    durable = 1 / (1 + np.exp(-(x @ head.w + head.b)))
    logits = x @ head.category_w + head.category_b
    category = np.exp(logits - logits.max(axis=1, keepdims=True))
    category /= category.sum(axis=1, keepdims=True)
    got_durable, got_category = head.probabilities(TEXTS)
    assert np.allclose(got_durable, durable, atol=1e-6)
    assert np.allclose(got_category, category, atol=1e-6)
    assert got_category.shape == (len(TEXTS), len(CATEGORIES))
    # an empty text has no n-gram: the intercepts alone decide
    assert got_durable[4] == pytest.approx(1 / (1 + np.exp(-head.b)))
