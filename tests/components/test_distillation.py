"""`distill` and `get_teacher_student_loss` on crf_tagger, crf_morphologizer
and crf_ner (spaCy v4's meaning: example.reference is the teacher's doc,
example.predicted the student's; no gold read), their errors, and a student
distilled from a teacher's docs alone against one trained on the teacher's
hard tags (slow)."""

import inspect
import random
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from spacy.training.converters import conllu_to_docs
from thinc.api import Adam, fix_random_seed

from spacy_crf.components import CRFEntityRecognizer, CRFMorphologizer, CRFTagger

from ..helpers import MORPH_SENTENCES, SMALL_MODEL, TRAIN_DATA, make_examples, make_nlp, train

NER_DATA = [
    ("Anna lives in New York City", [(0, 4, "PER"), (14, 27, "LOC")]),
    ("New York loves Anna Smith", [(0, 8, "LOC"), (15, 25, "PER")]),
    ("I like Berlin", [(7, 13, "LOC")]),
]


def teacher_examples(nlp, texts):
    """Examples of raw text: the teacher's doc and the student's, no annotation."""
    docs = [nlp.make_doc(text) for text in texts]
    return [Example(doc.copy(), doc.copy()) for doc in docs]


def student_of(factory, **config):
    """A fresh pipeline of the factory (initialized by the test with the teacher's labels)."""
    nlp = make_nlp(factory=factory, **config)
    return nlp, nlp.get_pipe(factory)


def distil(student_nlp, student, teacher, examples, steps):
    optimizer = student_nlp.create_optimizer()
    losses = {}
    for _ in range(steps):
        losses = {}
        student.distill(teacher, examples, sgd=optimizer, losses=losses)
    return losses


@pytest.mark.parametrize("component", [CRFTagger, CRFMorphologizer, CRFEntityRecognizer])
def test_every_component_has_distill_with_spacys_signature(component):
    parameters = inspect.signature(component.distill).parameters
    assert list(parameters) == ["self", "teacher_pipe", "examples", "drop", "sgd", "losses"]
    assert [parameters[n].kind for n in ("drop", "sgd", "losses")] == [inspect.Parameter.KEYWORD_ONLY] * 3
    assert [parameters[n].default for n in ("drop", "sgd", "losses")] == [0.0, None, None]
    assert list(inspect.signature(component.get_teacher_student_loss).parameters) == [
        "self",
        "teacher_scores",
        "student_scores",
    ]


def test_tagger_student_learns_the_teachers_tags_from_raw_text():
    fix_random_seed(0)
    teacher_nlp = make_nlp()
    train(teacher_nlp, make_examples(teacher_nlp))
    teacher = teacher_nlp.get_pipe("crf_tagger")
    fix_random_seed(1)
    student_nlp, student = student_of("crf_tagger")
    examples = teacher_examples(student_nlp, [text for text, _ in TRAIN_DATA])
    # the labels in another order than the teacher's: the teacher's columns are matched by name
    student.initialize(lambda: examples, nlp=student_nlp, labels=list(reversed(teacher.labels)))
    first = distil(student_nlp, student, teacher, examples, 1)["crf_tagger"]
    last = distil(student_nlp, student, teacher, examples, 60)["crf_tagger"]
    assert last < first / 10
    for text, annots in TRAIN_DATA:
        assert [t.tag_ for t in student_nlp(text)] == annots["tags"] == [t.tag_ for t in teacher_nlp(text)]


def test_loss_is_zero_when_the_student_is_the_teacher():
    fix_random_seed(0)
    nlp = make_nlp()
    train(nlp, make_examples(nlp))
    tagger = nlp.get_pipe("crf_tagger")
    docs = [nlp.make_doc(text) for text in ["I like green eggs", "Eat blue ham", "eggs", ""]]
    batch, _ = tagger.model.begin_update(docs)
    loss, d_batch = tagger.get_teacher_student_loss(tagger.teacher_scores(docs), batch)
    # float32 scores of size ~10 over a dozen tokens: rounding ~1e-5
    assert 0.0 <= loss < 1e-4
    assert float(d_batch.scores.emissions.abs().max()) < 1e-4


def test_ner_student_learns_the_teachers_entities_and_a_tempered_teacher_is_softer():
    fix_random_seed(0)
    teacher_nlp = make_nlp(factory="crf_ner")
    train(teacher_nlp, [Example.from_dict(teacher_nlp.make_doc(t), {"entities": e}) for t, e in NER_DATA], steps=80)
    teacher = teacher_nlp.get_pipe("crf_ner")
    fix_random_seed(1)
    student_nlp, student = student_of("crf_ner")
    examples = teacher_examples(student_nlp, [text for text, _ in NER_DATA])
    student.initialize(lambda: examples, nlp=student_nlp, labels=list(teacher.label_data))
    distil(student_nlp, student, teacher, examples, 80)
    for text, ents in NER_DATA:
        assert [(e.start_char, e.end_char, e.label_) for e in student_nlp(text).ents] == ents
    # the teacher's temperature is its distribution's: tau > 1 spreads it,
    # so a student that fits tau = 1 is further from it
    docs = [eg.predicted for eg in examples]
    batch, _ = student.model.begin_update(docs)
    sharp = student.get_teacher_student_loss(teacher.teacher_scores(docs), batch)[0]
    teacher.temperature = 3.0
    soft = student.get_teacher_student_loss(teacher.teacher_scores(docs), batch)[0]
    assert soft > sharp


def test_morphologizer_student_distils():
    fix_random_seed(0)
    vocab = spacy.blank("en").vocab
    teacher_nlp = make_nlp(factory="crf_morphologizer")
    gold = [Doc(vocab, words=w, pos=p, morphs=m) for w, p, m in MORPH_SENTENCES]
    examples = [Example(Doc(teacher_nlp.vocab, words=[t.text for t in d]), d) for d in gold]
    train(teacher_nlp, examples, steps=60)
    teacher = teacher_nlp.get_pipe("crf_morphologizer")
    fix_random_seed(1)
    student_nlp, student = student_of("crf_morphologizer")
    raw = [Example(Doc(student_nlp.vocab, words=w), Doc(student_nlp.vocab, words=w)) for w, _, _ in MORPH_SENTENCES]
    student.initialize(lambda: raw, nlp=student_nlp, labels=list(teacher.label_data))
    assert student.tags == teacher.tags
    distil(student_nlp, student, teacher, raw, 60)
    for words, _, _ in MORPH_SENTENCES:
        expected = [(t.pos_, str(t.morph)) for t in teacher_nlp(Doc(teacher_nlp.vocab, words=words))]
        assert [(t.pos_, str(t.morph)) for t in student_nlp(Doc(student_nlp.vocab, words=words))] == expected


FACTORED = {**SMALL_MODEL, "@architectures": "spacy_crf.BiLSTMCRF.v2", "transitions": "factored"}


@pytest.mark.parametrize("teacher_model,student_model", [(SMALL_MODEL, FACTORED), (FACTORED, SMALL_MODEL)])
def test_factored_and_full_transitions_distil_into_each_other(teacher_model, student_model):
    fix_random_seed(0)
    teacher_nlp = make_nlp(model=teacher_model, factory="crf_morphologizer")
    vocab = teacher_nlp.vocab
    gold = [Doc(vocab, words=w, pos=p, morphs=m) for w, p, m in MORPH_SENTENCES]
    train(teacher_nlp, [Example(Doc(vocab, words=[t.text for t in d]), d) for d in gold], steps=80)
    teacher = teacher_nlp.get_pipe("crf_morphologizer")
    docs = [Doc(vocab, words=w) for w, _, _ in MORPH_SENTENCES]
    # a factored teacher hands on its classes (the fast algorithms read them)
    assert (teacher.teacher_scores(docs).classes is not None) == (teacher_model is FACTORED)
    fix_random_seed(1)
    student_nlp, student = student_of("crf_morphologizer", model=student_model)
    raw = [Example(Doc(student_nlp.vocab, words=w), Doc(student_nlp.vocab, words=w)) for w, _, _ in MORPH_SENTENCES]
    student.initialize(lambda: raw, nlp=student_nlp, labels=list(teacher.label_data))
    first = distil(student_nlp, student, teacher, raw, 1)["crf_morphologizer"]
    last = distil(student_nlp, student, teacher, raw, 80)["crf_morphologizer"]
    assert last < first / 5
    for words, _, _ in MORPH_SENTENCES:
        expected = [(t.pos_, str(t.morph)) for t in teacher_nlp(Doc(teacher_nlp.vocab, words=words))]
        assert [(t.pos_, str(t.morph)) for t in student_nlp(Doc(student_nlp.vocab, words=words))] == expected


@pytest.fixture(scope="module")
def tagger_teacher():
    fix_random_seed(0)
    nlp = make_nlp()
    train(nlp, make_examples(nlp), steps=5)
    return nlp.get_pipe("crf_tagger")


def test_a_teacher_with_other_labels_is_refused_naming_them(tagger_teacher):
    nlp = make_nlp()
    examples = teacher_examples(nlp, ["I like green eggs"])
    nlp.get_pipe("crf_tagger").initialize(lambda: examples, nlp=nlp, labels=["J", "N", "X"])
    with pytest.raises(ValueError, match=r"\[E066\].*only the student has \['X'\], only the teacher has \['V'\]"):
        nlp.get_pipe("crf_tagger").distill(tagger_teacher, examples)


def test_a_teacher_that_is_no_crf_component_is_refused(tagger_teacher):
    nlp = make_nlp()
    examples = teacher_examples(nlp, ["I like green eggs"])
    nlp.get_pipe("crf_tagger").initialize(lambda: examples, nlp=nlp, labels=list(tagger_teacher.labels))
    spacy_tagger = spacy.blank("en").add_pipe("tagger")
    with pytest.raises(ValueError, match=r"\[E065\].*Tagger"):
        nlp.get_pipe("crf_tagger").distill(spacy_tagger, examples)


def test_docs_of_other_lengths_are_refused(tagger_teacher):
    nlp = make_nlp()
    student = nlp.get_pipe("crf_tagger")
    student.initialize(lambda: teacher_examples(nlp, ["eggs"]), nlp=nlp, labels=list(tagger_teacher.labels))
    examples = [Example(nlp.make_doc("I like eggs"), nlp.make_doc("I like green eggs"))]
    with pytest.raises(ValueError, match=r"\[E067\].*example 0.*4 tokens.*3"):
        student.distill(tagger_teacher, examples)


def test_a_student_whose_constraints_forbid_what_the_teacher_allows_is_refused():
    fix_random_seed(0)
    data = [("I like green eggs", {"tags": ["B-NP", "O", "B-NP", "I-NP"]})]
    teacher_nlp = make_nlp()
    train(teacher_nlp, make_examples(teacher_nlp, data), steps=2)
    teacher = teacher_nlp.get_pipe("crf_tagger")
    nlp = make_nlp(constraints="BIO")
    examples = teacher_examples(nlp, ["I like green eggs"])
    nlp.get_pipe("crf_tagger").initialize(lambda: examples, nlp=nlp, labels=list(teacher.labels))
    with pytest.raises(ValueError, match=r"\[E068\].*BIO.*the transition O -> I-NP"):
        nlp.get_pipe("crf_tagger").distill(teacher, examples)
    # the other way round is fine: the teacher's constraints forbid more
    nlp.get_pipe("crf_tagger").cfg["constraints"] = "none"
    student_nlp = make_nlp()
    student_nlp.get_pipe("crf_tagger").initialize(lambda: examples, nlp=student_nlp, labels=list(teacher.labels))
    constrained_teacher_nlp = make_nlp(constraints="BIO")
    train(constrained_teacher_nlp, make_examples(constrained_teacher_nlp, data), steps=2)
    losses = student_nlp.get_pipe("crf_tagger").distill(constrained_teacher_nlp.get_pipe("crf_tagger"), examples)
    assert 0.0 < losses["crf_tagger"] < 100.0


# The agreement check: a teacher trained on 300 gold sentences of the
# embedded sample; two students of the same config and seed see only 300
# other sentences: one distils from the teacher's scores, the other trains
# on the teacher's Viterbi tags, for the same steps.
SAMPLE = Path(__file__).parents[2] / "assets" / "sample" / "UD_English-EWT"
AGREEMENT_MODEL = {
    **SMALL_MODEL,
    "hidden_width": 32,
    "tok2vec": {**SMALL_MODEL["tok2vec"], "embed_size": 4000, "width": 64},
}


def sample_sentences(name, n):
    docs = conllu_to_docs((SAMPLE / name).read_text(encoding="utf8"), n_sents=1, no_print=True)
    return [doc for doc, _ in zip(docs, range(n))]


def shuffled_batches(items, size, rng):
    items = list(items)
    rng.shuffle(items)
    return [items[i : i + size] for i in range(0, len(items), size)]


def agreement(nlp, teacher_nlp, docs):
    """The share of the docs' tokens where the pipeline's tag is the teacher's."""
    words = [[t.text for t in doc] for doc in docs]
    ours = [t.tag_ for doc in nlp.pipe(Doc(nlp.vocab, words=w) for w in words) for t in doc]
    theirs = [t.tag_ for doc in teacher_nlp.pipe(Doc(teacher_nlp.vocab, words=w) for w in words) for t in doc]
    return float(numpy.mean([a == b for a, b in zip(ours, theirs)]))


@pytest.mark.slow
def test_distilled_student_agrees_with_the_teacher_better_than_one_trained_on_its_hard_tags():
    train_docs = sample_sentences("en_ewt-ud-train.conllu", 600)
    held_out = sample_sentences("en_ewt-ud-dev.conllu", 200)
    gold, unlabeled = train_docs[:300], train_docs[300:]
    fix_random_seed(0)
    teacher_nlp = make_nlp(model=AGREEMENT_MODEL)
    examples = [Example(Doc(teacher_nlp.vocab, words=[t.text for t in d]), d) for d in gold]
    optimizer = teacher_nlp.initialize(lambda: examples)
    rng = random.Random(0)
    for _ in range(15):
        for batch in shuffled_batches(examples, 16, rng):
            teacher_nlp.update(batch, sgd=optimizer)
    teacher = teacher_nlp.get_pipe("crf_tagger")
    tagged = list(teacher_nlp.pipe(Doc(teacher_nlp.vocab, words=[t.text for t in d]) for d in unlabeled))
    results = {}
    for mode in ("distilled", "hard tags"):
        fix_random_seed(1)
        nlp = make_nlp(model=AGREEMENT_MODEL)
        student = nlp.get_pipe("crf_tagger")
        if mode == "distilled":
            examples = [Example(Doc(nlp.vocab, words=[t.text for t in d]), d) for d in tagged]
            step = student.distill
        else:
            examples = [
                Example(
                    Doc(nlp.vocab, words=[t.text for t in d]),
                    Doc(nlp.vocab, words=[t.text for t in d], tags=[t.tag_ for t in d]),
                )
                for d in tagged
            ]
            step = student.update
        student.initialize(lambda egs=examples: egs, nlp=nlp, labels=list(teacher.labels))
        optimizer = Adam(0.004)
        rng = random.Random(1)
        for _ in range(25):
            for batch in shuffled_batches(examples, 16, rng):
                if mode == "distilled":
                    step(teacher, batch, sgd=optimizer)
                else:
                    step(batch, sgd=optimizer)
        results[mode] = (agreement(nlp, teacher_nlp, unlabeled), agreement(nlp, teacher_nlp, held_out))
    print("agreement with the teacher (distilled-on tokens, held-out tokens):", results)
    assert results["distilled"][0] >= 0.95
    assert results["distilled"][1] >= results["hard tags"][1]
