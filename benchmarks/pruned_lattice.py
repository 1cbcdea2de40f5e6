"""A pruned lattice (MarMoT's coarse-to-fine decoding) against the full K x K
Viterbi and factored transitions, on trained crf_morphologizer (pos+morph) pipelines.

    python -m benchmarks.pruned_lattice FULL_MODEL DEV.spacy [--factored MODEL] \\
        [--keep 1 2 4 8 16 32] [--repeats 7] [--threads 1] [--allocator steady] \\
        [--output metrics/speed/pruned_lattice.json]

FULL_MODEL is a pipeline trained with `transitions = "full"` (a score for
every pair of bundles). A pruned lattice keeps, at each token, the `keep`
bundles with the highest emission scores (a zero-order first pass: K
scores read a token, O(K * keep) at worst) and runs the exact Viterbi over
what it kept, with the full matrix (O(keep^2) a token instead of O(K^2)).
Scored on the dev sentences, each read whole as one sequence (as the
configs train; a pipeline with `by_sentence = true` may cut one where the
sentencizer finds a sentence end inside it, so `spacy train`'s dev scores
differ a little), gold tokens, each variant on the same emissions (one
`predict` of the network):

- decode ms: the median time of the decode; for a pruned lattice, the sum of
  the first pass's median (its own column) and the lattice Viterbi's;
- kept gold: the share of tokens whose gold bundle the lattice kept (what
  the decode can reach at best; with every label kept, the share of tokens
  whose gold bundle was seen in training);
- as exact: the share of tokens labelled as the exact full Viterbi labels
  them;
- bundle accuracy: UPOS and every feature right, over every word (a gold
  bundle unseen in training, or unset, counts as an error).

With --factored, the pipeline trained with `transitions = "factored"` (the
config's setting) is scored the same way with its own exact Viterbi, for the
third corner of the ablation. All decodes run spacy_crf's CPU code (Numba)
on one thread.
"""

import argparse
from pathlib import Path
from typing import Dict, List, Optional

import numba
import numpy
import spacy
import torch

from spacy_crf.nn.kernels import dispatch
from spacy_crf.targets import gold_ids as label_ids

from .common import (
    add_allocator_argument,
    bare,
    corpus_sentences,
    crf_component_name,
    environment,
    median_ms,
    report,
    use_allocator,
)


def kept_labels(emissions: numpy.ndarray, keep: int, lengths: Optional[numpy.ndarray] = None) -> numpy.ndarray:
    """(B, T, keep) the ids of each token's `keep` highest emission scores,
    highest first (all K labels, in label order, when keep >= K: a read-only
    view, not a (B, T, K) copy). Steps past a row's length (all of them kept
    when `lengths` is None) keep labels 0 to keep - 1."""
    B, T, K = emissions.shape
    if keep < 1:
        raise ValueError(f"keep must be at least 1, not {keep}")
    if keep >= K:
        return numpy.broadcast_to(numpy.arange(K, dtype=numpy.int64), (B, T, K))
    lengths = numpy.full(B, T, dtype=numpy.int64) if lengths is None else numpy.asarray(lengths, dtype=numpy.int64)
    kept = numpy.empty((B, T, keep), dtype=numpy.int64)
    _top(emissions, lengths, kept)
    return kept


@numba.njit(cache=True, nogil=True)
def _top(em, lengths, kept):  # pragma: no cover - compiled
    """Each real step's `keep` highest scores, highest first (the lower id
    first among equal ones), by insertion into a sorted list: K reads a
    token, and a shift of up to `keep` for each score that enters."""
    B, T, keep = kept.shape
    K = em.shape[2]
    values = numpy.empty(keep, dtype=em.dtype)
    for b in range(B):
        for t in range(T):
            if t >= lengths[b]:
                for j in range(keep):
                    kept[b, t, j] = j
                continue
            n = 0
            for label in range(K):
                v = em[b, t, label]
                if n == keep and not v > values[keep - 1]:
                    continue
                i = n if n < keep else keep - 1
                while i > 0 and v > values[i - 1]:
                    values[i] = values[i - 1]
                    kept[b, t, i] = kept[b, t, i - 1]
                    i -= 1
                values[i] = v
                kept[b, t, i] = label
                if n < keep:
                    n += 1


def pruned_viterbi(emissions, lengths, kept, transitions, start, end):
    """The best path through the kept labels: exact Viterbi over the lattice
    whose step t of row b allows only kept[b, t].

    emissions (ndarray): (B, T, K) float.
    lengths (ndarray): (B,) int, each between 0 and T.
    kept (ndarray): (B, T, k) int64 label ids.
    transitions, start, end (ndarray): (K, K), (K,), (K,) float.
    RETURNS (Tuple[ndarray, ndarray]): paths (B, T) int64 (padded steps
        repeat the last label, 0 for an empty row) and their scores (B,)
        (0 for an empty row).
    """
    B, T, _ = emissions.shape
    paths = numpy.zeros((B, T), dtype=numpy.int64)
    best = numpy.zeros(B, dtype=emissions.dtype)
    _pruned(emissions, numpy.asarray(lengths, dtype=numpy.int64), kept, transitions, start, end, paths, best)
    return paths, best


@numba.njit(cache=True, nogil=True)
def _pruned(em, lengths, kept, transitions, start, end, paths, best):  # pragma: no cover - compiled
    B, T, k = kept.shape
    score = numpy.empty(k, dtype=em.dtype)
    new = numpy.empty(k, dtype=em.dtype)
    back = numpy.zeros((max(T, 1), k), dtype=numpy.int64)
    for b in range(B):
        n = lengths[b]
        if n == 0:
            continue
        for j in range(k):
            label = kept[b, 0, j]
            score[j] = start[label] + em[b, 0, label]
        for t in range(1, n):
            for j in range(k):
                label = kept[b, t, j]
                top = -numpy.inf
                arg = 0
                for i in range(k):
                    v = score[i] + transitions[kept[b, t - 1, i], label]
                    if v > top:
                        top = v
                        arg = i
                new[j] = top + em[b, t, label]
                back[t, j] = arg
            score[:] = new
        top = -numpy.inf
        arg = 0
        for j in range(k):
            v = score[j] + end[kept[b, n - 1, j]]
            if v > top:
                top = v
                arg = j
        best[b] = top
        for t in range(n - 1, -1, -1):
            paths[b, t] = kept[b, t, arg]
            if t > 0:
                arg = back[t, arg]
        for t in range(n, T):
            paths[b, t] = paths[b, n - 1]


def gold_ids(crf, docs: List) -> List[numpy.ndarray]:
    """Per doc, each token's gold label id (-1: unknown or unseen in training)."""
    return [label_ids(crf.target.predicted_values(doc), crf.tags)[0] for doc in docs]


def seen_share(gold: List[numpy.ndarray]) -> float:
    """The % of tokens whose gold label is one of the labels."""
    return round(100 * sum(int((g >= 0).sum()) for g in gold) / max(sum(len(g) for g in gold), 1), 2)


def score_paths(
    paths: numpy.ndarray, lengths: numpy.ndarray, gold: List[numpy.ndarray], exact: Optional[numpy.ndarray] = None
) -> Dict[str, float]:
    """Bundle accuracy over every token (a gold bundle unseen in training
    counts as an error), and the share of tokens labelled as `exact` labels them."""
    right = same = total = 0
    for b, g in enumerate(gold):
        p = paths[b, : lengths[b]]
        right += int((p == g).sum())
        if exact is not None:
            same += int((p == exact[b, : lengths[b]]).sum())
        total += len(g)
    result = {"bundle_accuracy": round(100 * right / max(total, 1), 2)}
    if exact is not None:
        result["as_exact"] = round(100 * same / max(total, 1), 2)
    return result


def network_scores(model_path: str, corpus: str):
    """(nlp, the dev sentences with gold, the CRF scores of one predict over their bare copies)."""
    nlp = spacy.load(model_path)
    crf_name = crf_component_name(nlp)
    crf = nlp.get_pipe(crf_name)
    gold_docs = list(corpus_sentences(nlp.vocab, corpus))
    docs = [bare(doc) for doc in gold_docs]
    for name, proc in nlp.pipeline:
        if name == crf_name:
            break
        docs = list(proc.pipe(docs))
    with torch.no_grad():
        scores = crf.model.predict(docs).scores
    lengths = scores.mask.sum(1).tolist()
    if lengths != [len(doc) for doc in docs]:  # one row per sentence (none is longer than a chunk)
        raise SystemExit("a sentence was cut into chunks: raise the model's chunk_size")
    return nlp, crf, gold_docs, scores


def measure(args) -> Dict:
    nlp, crf, gold_docs, scores = network_scores(args.full_model, args.corpus)
    if scores.classes is not None:
        raise SystemExit(f'{args.full_model} was trained with factored transitions: give a transitions = "full" one')
    gold = gold_ids(crf, gold_docs)
    em = scores.emissions.detach().float().contiguous().numpy()
    lengths = scores.mask.sum(1).numpy().astype(numpy.int64)
    trans, start, end = (
        x.detach().float().contiguous().numpy() for x in (scores.transitions, scores.start, scores.end)
    )
    n_tokens = int(lengths.sum())

    seen = seen_share(gold)  # every label kept
    exact_paths = dispatch.viterbi_decode(scores)[0].numpy()
    rows = [
        {
            "decoder": "full, exact",
            "keep": len(crf.tags),
            "decode_ms": round(median_ms(lambda: dispatch.viterbi_decode(scores), args.repeats), 2),
            "kept_gold": seen,
            **score_paths(exact_paths, lengths, gold, exact_paths),
        }
    ]
    for keep in args.keep:
        kept = kept_labels(em, keep, lengths)
        paths, _ = pruned_viterbi(em, lengths, kept, trans, start, end)
        in_lattice = sum(int((k_b[: len(g)] == g[:, None]).any(1).sum()) for g, k_b in zip(gold, kept))
        first_ms = median_ms(lambda keep=keep: kept_labels(em, keep, lengths), args.repeats)
        lattice_ms = median_ms(lambda kept=kept: pruned_viterbi(em, lengths, kept, trans, start, end), args.repeats)
        rows.append(
            {
                "decoder": "full, pruned",
                "keep": keep,
                "decode_ms": round(first_ms + lattice_ms, 2),
                "first_pass_ms": round(first_ms, 2),
                "kept_gold": round(100 * in_lattice / n_tokens, 2),
                **score_paths(paths, lengths, gold, exact_paths),
            }
        )
    if args.factored:
        _, f_crf, f_gold_docs, f_scores = network_scores(args.factored, args.corpus)
        f_paths = dispatch.viterbi_decode(f_scores)[0].numpy()
        f_lengths = f_scores.mask.sum(1).numpy()
        f_gold = gold_ids(f_crf, f_gold_docs)
        rows.append(
            {
                "decoder": "factored, exact",
                "keep": len(f_crf.tags),
                "decode_ms": round(median_ms(lambda: dispatch.viterbi_decode(f_scores), args.repeats), 2),
                "kept_gold": seen_share(f_gold),
                **score_paths(f_paths, f_lengths, f_gold),
            }
        )
    return {
        "environment": environment(),
        "full_model": args.full_model,
        "factored_model": args.factored,
        "corpus": args.corpus,
        "labels": len(crf.tags),
        "sequences": len(gold_docs),
        "tokens": n_tokens,
        "threads": args.threads,
        "repeats": args.repeats,
        "rows": rows,
    }


def table(record: Dict) -> str:
    lines = [
        "| decoder | bundles kept a token | decode ms (first pass) | gold bundle kept | labelled as the exact Viterbi "
        "| bundle accuracy |",
        "|---|---|---|---|---|---|",
    ]
    for r in record["rows"]:
        same = f"{r['as_exact']:.2f}%" if "as_exact" in r else "-"
        first = f" ({r['first_pass_ms']:.1f})" if "first_pass_ms" in r else ""
        lines.append(
            f"| {r['decoder']} | {r['keep']:,} | {r['decode_ms']:.1f}{first} | {r['kept_gold']:.2f}% | {same} | "
            f"{r['bundle_accuracy']:.2f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("full_model")
    parser.add_argument("corpus")
    parser.add_argument("--factored", default=None, help="a pipeline trained with factored transitions")
    parser.add_argument("--keep", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None)
    add_allocator_argument(parser)
    args = parser.parse_args(argv)
    use_allocator(args.allocator)
    torch.set_num_threads(args.threads)
    record = measure(args)
    record["allocator"] = args.allocator
    print(table(record))
    report(record, args.output)


if __name__ == "__main__":
    main()
