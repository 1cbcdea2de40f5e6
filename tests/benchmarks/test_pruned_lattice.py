"""benchmarks.pruned_lattice: the pruned Viterbi is the best path through the
kept labels (brute force on tiny cases, lengths 0 and 1 and padding), the
exact Viterbi when every label is kept, and the benchmark scores a full and a
factored pipeline on the same sentences."""

import itertools
import json

import numpy
import pytest
import torch

from benchmarks.pruned_lattice import kept_labels, main, pruned_viterbi
from spacy_crf.nn.crf import CRFScores, viterbi_decode

from ..helpers import MORPH_SENTENCES, SMALL_MODEL, make_nlp, train, write_morph_docbin


def random_scores(B, T, K, seed):
    rng = numpy.random.default_rng(seed)
    return (rng.normal(size=(B, T, K)), rng.normal(size=(K, K)), rng.normal(size=K), rng.normal(size=K))


def path_score(em, trans, start, end, b, path):
    if not path:
        return 0.0
    score = start[path[0]] + end[path[-1]] + sum(em[b, t, y] for t, y in enumerate(path))
    return score + sum(trans[a, c] for a, c in zip(path, path[1:]))


@pytest.mark.parametrize("keep", [1, 2, 3])
def test_pruned_viterbi_is_the_best_path_through_the_kept_labels(keep):
    em, trans, start, end = random_scores(4, 3, 5, seed=keep)
    lengths = numpy.array([3, 0, 1, 2])
    kept = kept_labels(em, keep)
    paths, best = pruned_viterbi(em, lengths, kept, trans, start, end)
    for b, n in enumerate(lengths):
        candidates = [list(path) for path in itertools.product(*(kept[b, t] for t in range(n)))]
        scores = [path_score(em, trans, start, end, b, path) for path in candidates]
        assert best[b] == pytest.approx(max(scores))
        assert list(paths[b, :n]) == candidates[int(numpy.argmax(scores))]
        assert set(paths[b, n:]) <= ({paths[b, n - 1]} if n else {0})  # padding repeats the last label


def test_keeping_every_label_is_the_exact_viterbi():
    em, trans, start, end = random_scores(5, 7, 6, seed=0)
    lengths = numpy.array([7, 1, 0, 4, 7])
    paths, best = pruned_viterbi(em, lengths, kept_labels(em, 6), trans, start, end)
    mask = torch.arange(7)[None, :] < torch.as_tensor(lengths)[:, None]
    exact_paths, exact_best = viterbi_decode(CRFScores(*map(torch.as_tensor, (em, mask, trans, start, end))))
    for b, n in enumerate(lengths):
        assert list(paths[b, :n]) == exact_paths[b, :n].tolist()
    assert numpy.allclose(best, exact_best.numpy())


def test_kept_labels_are_each_tokens_highest_emissions():
    em = numpy.array([[[0.1, 3.0, -1.0, 2.0], [5.0, 4.0, 3.0, -2.0]]])
    assert kept_labels(em, 2).tolist() == [[[1, 3], [0, 1]]]  # highest first
    assert kept_labels(em, 3, numpy.array([1])).tolist() == [[[1, 3, 0], [0, 1, 2]]]  # padding: 0, 1, 2
    assert kept_labels(em, 9)[0, 0].tolist() == [0, 1, 2, 3]
    with pytest.raises(ValueError):
        kept_labels(em, 0)
    ties = numpy.array([[[1.0, 2.0, 2.0, 0.0, 2.0]]])
    assert kept_labels(ties, 2).tolist() == [[[1, 2]]]  # the lower ids first among equal scores
    rng = numpy.random.default_rng(0)
    em = rng.normal(size=(3, 5, 40)).astype(numpy.float32)
    for keep in (1, 7, 39):
        expected = numpy.sort(em, axis=2)[:, :, ::-1][:, :, :keep]
        assert numpy.array_equal(numpy.take_along_axis(em, kept_labels(em, keep), axis=2), expected)


def test_benchmark_scores_the_full_pipeline_pruned_and_the_factored_one(tmp_path):
    from ..components.test_morphologizer import morph_examples

    corpus = tmp_path / "dev.spacy"
    write_morph_docbin(corpus)
    for transitions in ("full", "factored"):
        nlp = make_nlp(
            model={**SMALL_MODEL, "@architectures": "spacy_crf.BiLSTMCRF.v2", "transitions": transitions},
            factory="crf_morphologizer",
            target="pos+morph",
        )
        train(nlp, morph_examples(nlp), steps=30)
        nlp.to_disk(tmp_path / transitions)
    output = tmp_path / "pruned.json"
    main(
        [
            str(tmp_path / "full"),
            str(corpus),
            "--factored",
            str(tmp_path / "factored"),
            "--keep",
            "1",
            "2",
            "50",
            "--repeats",
            "1",
            "--output",
            str(output),
        ]
    )
    record = json.loads(output.read_text())
    exact, *pruned, factored = record["rows"]
    assert exact["decoder"] == "full, exact" and factored["decoder"] == "factored, exact"
    assert [row["keep"] for row in pruned] == [1, 2, 50]
    assert exact["as_exact"] == 100.0 and pruned[-1]["as_exact"] == 100.0  # every label kept
    assert pruned[-1]["bundle_accuracy"] == exact["bundle_accuracy"]
    # one bundle kept: the path is each token's best emission, right exactly where the gold was kept
    assert pruned[0]["bundle_accuracy"] == pruned[0]["kept_gold"]
    kept_gold = [row["kept_gold"] for row in pruned]
    assert kept_gold == sorted(kept_gold) and kept_gold[-1] == 100.0
    assert all(row["decode_ms"] >= 0 for row in record["rows"])  # timed (tiny here: rounds to 0.0 ms)
    assert all(0 <= row["first_pass_ms"] <= row["decode_ms"] for row in pruned)
    assert exact["kept_gold"] == factored["kept_gold"] == 100.0  # every gold bundle is seen in training
    assert record["tokens"] == 3 * sum(len(words) for words, _, _ in MORPH_SENTENCES)
    with pytest.raises(SystemExit):  # a factored pipeline is no full one
        main([str(tmp_path / "factored"), str(corpus), "--repeats", "1"])
