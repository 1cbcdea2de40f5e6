"""Docs that a pipeline tags differently when several Python threads call it
at once (as a FastAPI or Flask thread pool does) than when one thread does.

    python -m benchmarks.thread_stress training/stress/tag/model-best \
        training/stress/ents/model-best=corpus/uner-dev.spacy \
        corpus/en_ewt-ud-dev.spacy [--docs 1000] [--threads 2 4 16] \
        [--quantize none int8] [--rounds 3] [--control PIPELINE] \
        [--output metrics/thread_stress.json]

The texts are those of the corpus' first --docs sentences (each sentence a
doc, as `spacy convert --n-sents 1` gives); PIPELINE=CORPUS takes that
pipeline's texts from another corpus. For each --quantize mode a pipeline is
loaded with its spacy-crf component (crf_tagger, crf_morphologizer or crf_ner,
found by its factory) set to that
mode; every text is tagged once in turn with `nlp(text)`, then, for each
--threads count, --rounds times by a ThreadPoolExecutor of that many threads,
every text submitted and each thread calling `nlp(text)` on the one pipeline.
A doc differs when any threaded call wrote another annotation than the call
in turn: token.tag_, token.pos_, str(token.morph) or doc.ents as (start, end,
label). torch.get_num_threads() is read before and after each threaded run.
--control adds pipelines (spaCy's own tagger, say) run the same way, as
saved. Prints a Markdown table and writes everything as JSON to --output.
"""

import argparse
import itertools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import spacy
import torch
from spacy.language import Language
from spacy.tokens import Doc

import spacy_crf

from .common import corpus_sentences, crf_component_name, write_json

Annotation = Tuple[Tuple[Tuple[str, str, str], ...], Tuple[Tuple[int, int, str], ...]]


def annotation(doc: Doc) -> Annotation:
    """Everything a tagger may write: each token's tag, POS and morph, and the entities."""
    tokens = tuple((t.tag_, t.pos_, str(t.morph)) for t in doc)
    return tokens, tuple((e.start, e.end, e.label_) for e in doc.ents)


def crf_component(nlp: Language) -> str:
    """RETURNS (str): the name of the pipeline's spacy-crf component."""
    return crf_component_name(nlp)


def load(path: Path, quantize: Optional[str] = None) -> Language:
    """The pipeline, its spacy-crf component set to this quantize mode (None: as saved)."""
    if quantize is None:
        return spacy.load(path)
    return spacy.load(path, config={"components": {crf_component_name(path): {"quantize": quantize}}})


def stress(
    nlp: Language, texts: Sequence[str], threads: int, *, rounds: int = 1, reference: Optional[List[Annotation]] = None
) -> Dict:
    """Tag the texts with nlp(text) from `threads` threads at once, `rounds`
    times, and compare each doc with the one tagged in turn.

    nlp (Language): the pipeline, shared by every thread.
    texts (Sequence[str]): the texts.
    threads (int): the thread pool's size.
    rounds (int): how many times every text is submitted.
    reference (Optional[List[Annotation]]): the annotations in turn; tagged here if None.
    RETURNS (Dict): "docs", "differing" (docs that any round tagged differently),
        "differing_calls" (calls that did, over all rounds), "torch_threads_before"
        and "torch_threads_after" (torch.get_num_threads() around the threaded run).
    """
    if reference is None:
        reference = [annotation(nlp(text)) for text in texts]
    before = torch.get_num_threads()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        results = list(pool.map(lambda text: annotation(nlp(text)), list(texts) * rounds))
    after = torch.get_num_threads()
    wrong = [i % len(texts) for i, result in enumerate(results) if result != reference[i % len(texts)]]
    return {
        "docs": len(texts),
        "differing": len(set(wrong)),
        "differing_calls": len(wrong),
        "torch_threads_before": before,
        "torch_threads_after": after,
    }


def run(nlp: Language, texts: Sequence[str], thread_counts: Sequence[int], rounds: int) -> List[Dict]:
    """`stress` at each thread count, against one tagging in turn."""
    reference = [annotation(nlp(text)) for text in texts]
    return [{"threads": n, **stress(nlp, texts, n, rounds=rounds, reference=reference)} for n in thread_counts]


def table(rows: List[Dict]) -> str:
    """A Markdown table of the rows."""
    lines = [
        "| pipeline | target | quantize | threads | docs | docs differing | differing calls | torch threads before / after |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['pipeline']} | {r['target']} | {r['quantize']} | {r['threads']} | {r['docs']:,} | "
            f"{r['differing']} | {r['differing_calls']} | {r['torch_threads_before']} / {r['torch_threads_after']} |"
        )
    return "\n".join(lines)


def texts_of(corpus: Path, n: int) -> List[str]:
    """The texts of the corpus' first n sentences."""
    return [doc.text for doc in itertools.islice(corpus_sentences(spacy.blank("en").vocab, corpus), n)]


def main(argv: Optional[List[str]] = None) -> Dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "pipelines", nargs="+", help="pipeline folders with a spacy-crf component; PIPELINE=CORPUS: its own texts"
    )
    parser.add_argument("corpus", type=Path, help="a .spacy file")
    parser.add_argument("--docs", type=int, default=1000, help="the first N sentences")
    parser.add_argument("--threads", type=int, nargs="+", default=[2, 4, 16])
    parser.add_argument("--quantize", nargs="+", default=["none", "int8"])
    parser.add_argument("--rounds", type=int, default=3, help="times every text is submitted to the pool")
    parser.add_argument(
        "--control", nargs="*", default=[], help="pipelines run as saved (spaCy's tagger); PIPELINE=CORPUS too"
    )
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)

    rows = []
    for spec, modes in [(spec, args.quantize) for spec in args.pipelines] + [(spec, [None]) for spec in args.control]:
        path, _, corpus = spec.partition("=")
        corpus = Path(corpus) if corpus else args.corpus
        texts = texts_of(corpus, args.docs)
        for mode in modes:
            nlp = load(Path(path), mode)
            target = nlp.get_pipe(crf_component(nlp)).cfg["target"] if mode else "+".join(nlp.pipe_names)
            for result in run(nlp, texts, args.threads, args.rounds):
                rows.append(
                    {"pipeline": path, "corpus": str(corpus), "target": target, "quantize": mode or "-", **result}
                )
    print(table(rows))
    record = {"settings": {k: str(v) for k, v in vars(args).items()}, "spacy_crf": spacy_crf.__file__, "results": rows}
    write_json(record, args.output)
    return record


if __name__ == "__main__":
    main()
