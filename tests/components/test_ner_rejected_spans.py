"""crf_ner's incorrect_spans_key: the reference's rejected
spans leave the paths that contain them out of the gold sum, exactly; a
rejection that is also a gold entity is dropped; training on rejections only
lowers the rejected span's posterior."""

import pytest
import torch
from spacy.tokens import Span
from spacy.training import Example
from thinc.api import fix_random_seed

from spacy_crf.nn import log_partition
from spacy_crf.nn.rejected import log_partition_without
from spacy_crf.targets import span_patterns

from ..helpers import make_nlp, train
from .test_ner import NER_DATA, ner_examples

KEY = "incorrect_spans"


def with_rejections(nlp, text, rejected, entities=None):
    """An example whose reference has rejected spans (token offsets) and,
    optionally, entities; without entities every label is unknown."""
    predicted = nlp.make_doc(text)
    reference = nlp.make_doc(text)
    if entities is not None:
        reference = Example.from_dict(reference, {"entities": entities}).reference
    reference.spans[KEY] = [Span(reference, start, end, label=label) for start, end, label in rejected]
    return Example(predicted, reference)


@pytest.fixture(scope="module")
def trained():
    fix_random_seed(0)
    nlp = make_nlp(factory="crf_ner", incorrect_spans_key=KEY)
    train(nlp, ner_examples(nlp), steps=10)
    return nlp


def test_loss_is_the_exact_likelihood_without_the_rejected_spans(trained):
    tagger = trained.get_pipe("crf_ner")
    example = with_rejections(trained, "Anna lives in New York City", [(3, 6, "LOC"), (0, 1, "PER")])
    batch = tagger.model.predict([example.predicted])
    loss, _ = tagger.get_loss([example], batch)
    types, patterns = span_patterns(tagger.tags, tagger.cfg["scheme"])
    spans = torch.tensor([[0, 3, 5, types.index("LOC")], [0, 0, 0, types.index("PER")]])
    allowed = torch.ones_like(batch.scores.emissions, dtype=torch.bool)
    expected = log_partition(batch.scores).double() - log_partition_without(
        batch.scores, allowed, spans, torch.tensor(patterns)
    )
    assert loss == pytest.approx(float(expected.sum()), rel=1e-5)
    assert loss > 0


def test_no_rejections_and_contradicted_rejections_add_nothing(trained):
    tagger = trained.get_pipe("crf_ner")
    text, entities = NER_DATA[0]
    plain = Example.from_dict(trained.make_doc(text), {"entities": entities})
    # "Anna" is gold PER: rejecting it contradicts the gold, which wins
    contradicted = with_rejections(trained, text, [(0, 1, "PER"), (1, 2, "NOPE")], entities)
    batch = tagger.model.predict([plain.predicted])
    assert tagger.get_loss([contradicted], batch)[0] == pytest.approx(tagger.get_loss([plain], batch)[0], rel=1e-6)
    unannotated = with_rejections(trained, text, [])
    assert tagger.get_loss([unannotated], batch)[0] == 0.0


def test_training_on_rejections_lowers_the_rejected_span():
    fix_random_seed(0)
    trained = make_nlp(factory="crf_ner", incorrect_spans_key=KEY)
    train(trained, ner_examples(trained), steps=10)
    tagger = trained.get_pipe("crf_ner")
    types, patterns = span_patterns(tagger.tags, tagger.cfg["scheme"])
    text = "Smith likes Berlin"
    rejected = (2, 3, "PER")  # "Berlin" is not a person

    def prob():
        doc = trained.make_doc(text)
        return tagger.model.predict([doc]).span_probabilities(patterns, [[(2, 3, types.index("PER"))]])[0].given[0]

    before = prob()
    optimizer = trained.resume_training()
    for _ in range(10):
        trained.update([with_rejections(trained, text, [rejected])], sgd=optimizer)
    assert prob() < before * 0.5


def test_incorrect_spans_key_is_a_setting_of_crf_ner():
    """crf_tagger still takes 0.x's setting, and refuses it for its own targets."""
    with pytest.raises(ValueError, match=r"\[E020\].*crf_ner"):
        make_nlp(target="tag", incorrect_spans_key=KEY)
