"""What the benchmarks share: timers, the corpora they time and score on, random CRF batches, the arguments and the output."""

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import spacy
import torch
from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.util import load_config
from spacy.vocab import Vocab

from spacy_crf.nn import CRFScores

# the (B, T, K) shapes of the CRF kernel benchmarks (crf_kernels, gpu)
SHAPES = [(256, 40, 18), (256, 40, 50), (1024, 60, 50), (16, 512, 20)]

# How the C library's malloc is set for a benchmark's process (`use_allocator`).
ALLOCATORS = ("default", "steady")
_allocator = "default"
# glibc's mallopt parameters, and the largest mmap threshold it accepts on 64-bit
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MAX_MMAP_THRESHOLD = 32 * 1024 * 1024


def use_allocator(mode: str) -> str:
    """Set how glibc's malloc treats freed memory in this process, before timing.

    "default" leaves it alone: glibc serves large blocks by mmap and gives
    freed memory above its trim threshold back to the OS, so a pipeline that
    frees and re-allocates large arrays every batch pays page faults for them
    again, on some passes more than others (on a 2-core Xeon, spaCy's
    tagger's median pass ran at about half its steady words/s this way,
    crf_tagger's at about four fifths: docs/design.md). "steady" keeps
    freed memory in the process and serves blocks under 32 MiB from the heap
    (no trimming, no mmap below 32 MiB: what GLIBC_TUNABLES=
    glibc.malloc.trim_threshold=...:glibc.malloc.mmap_threshold=33554432 does
    from the start); larger blocks are still mapped afresh. Recorded by
    `environment`; a warning on stderr where "steady" could not be set.

    RETURNS (str): the mode in force ("default" where the C library is not glibc).
    """
    global _allocator
    if mode not in ALLOCATORS:
        raise ValueError(f"allocator must be one of {ALLOCATORS}, got {mode!r}")
    if mode == "steady":
        import ctypes

        try:
            mallopt = ctypes.CDLL("libc.so.6").mallopt
        except (OSError, AttributeError):
            mallopt = None
        applied = (
            [
                bool(mallopt(option, ctypes.c_int(value)))
                for option, value in ((M_TRIM_THRESHOLD, 2**31 - 1), (M_MMAP_THRESHOLD, MAX_MMAP_THRESHOLD))
            ]
            if mallopt
            else []
        )
        if applied == [True, True]:
            _allocator = "steady"
        else:
            print(
                f"warning: --allocator steady not applied (mallopt: {applied or 'no glibc'}); "
                "timing with malloc as it comes",
                file=sys.stderr,
            )
    return _allocator


def add_allocator_argument(parser) -> None:
    """--allocator default|steady (see `use_allocator`) on an argparse parser."""
    parser.add_argument(
        "--allocator",
        choices=ALLOCATORS,
        default="default",
        help="glibc malloc as it comes, or steady: freed memory kept in the process",
    )


def median_ms(fn: Callable[[], object], repeats: int, device: str = "cpu") -> float:
    """Median time of fn() over repeats, after two warm-up calls.

    fn (Callable[[], object]): what is timed.
    repeats (int): how many timed calls.
    device (str): "cuda" times each call between CUDA events, the device
        synchronised before it and before reading; anything else, by the host clock.
    RETURNS (float): the median, in milliseconds.
    """
    fn()
    fn()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            fn()
            times.append((time.perf_counter() - begin) * 1000)
    return statistics.median(times)


# the factories of spacy-crf's components
CRF_FACTORIES = ("crf_tagger", "crf_morphologizer", "crf_ner")


def crf_component_name(pipeline: Union[Language, str, Path]) -> str:
    """The name of a pipeline's one spacy-crf component (crf_tagger,
    crf_morphologizer or crf_ner): pipelines trained with the shipped configs
    name it after its factory, those of 0.x configs "crf_tagger" whatever its
    target.

    pipeline (Union[Language, str, Path]): a loaded pipeline, or the folder of
        a saved one (its config.cfg is read, so that settings can be given to
        the component when it loads).
    RETURNS (str): the component's name; SystemExit if it has none or several.
    """
    if isinstance(pipeline, Language):
        factories = {name: pipeline.get_pipe_meta(name).factory for name in pipeline.pipe_names}
    else:
        config = load_config(Path(pipeline) / "config.cfg")
        factories = {name: config["components"][name].get("factory") for name in config["nlp"]["pipeline"]}
    names = [name for name, factory in factories.items() if factory in CRF_FACTORIES]
    if len(names) != 1:
        raise SystemExit(f"{pipeline}: expected one spacy-crf component ({', '.join(CRF_FACTORIES)}), found {names}")
    return names[0]


def corpus_sentences(vocab: Vocab, corpus_path: Union[str, Path]) -> Iterator[Doc]:
    """Each sentence of a .spacy corpus as a doc of its own, with its gold
    annotation, as `spacy evaluate --gold-preproc` reads them (a doc without
    sentence boundaries is one sentence).

    vocab (Vocab): the vocab the docs use.
    corpus_path (str): a .spacy file.
    YIELDS (Doc): the sentences, in order.
    """
    for doc in DocBin().from_disk(corpus_path).get_docs(vocab):
        for sent in doc.sents if doc.has_annotation("SENT_START") else [doc[:]]:
            yield sent.as_doc()


def gold_sentences(corpus_path: Union[str, Path], vocab: Vocab) -> List[Doc]:
    """The corpus' sentences (`corpus_sentences`), as a list."""
    return list(corpus_sentences(vocab, corpus_path))


def tag_gold_tokens(model_path: str, gold_docs: List[Doc]) -> Iterator[Doc]:
    """The docs tagged by the pipeline at model_path, on their own tokens.

    model_path (str): a pipeline for spacy.load.
    gold_docs (List[Doc]): the docs whose words are tagged.
    RETURNS (Iterator[Doc]): new docs, in order, annotated by the pipeline.
    """
    nlp = spacy.load(model_path)
    return nlp.pipe(Doc(nlp.vocab, words=[t.text for t in doc]) for doc in gold_docs)


def model_train_dev_parser(doc: str) -> argparse.ArgumentParser:
    """The arguments of a script that scores a model against its training and dev data.

    doc (str): the script's docstring; its first line describes the script.
    RETURNS (argparse.ArgumentParser): model, train, dev and --attr.
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("train")
    parser.add_argument("dev")
    parser.add_argument("--attr", default="tag_", help="tag_ or pos_")
    return parser


def unannotated_docs(nlp: Language, corpus_path: str) -> List[Doc]:
    """The corpus' words and spaces, without any annotation.

    nlp (Language): the pipeline whose vocab the docs use.
    corpus_path (str): a .spacy file.
    RETURNS (List[Doc]): one doc per doc of the corpus.
    """
    return [bare(doc) for doc in DocBin().from_disk(corpus_path).get_docs(nlp.vocab)]


def token_labels(nlp: Language, docs: List[Doc]) -> List[str]:
    """Every token's label as a pipeline writes it (tag, POS and morph), on copies of docs."""
    return [f"{t.tag_}|{t.pos_}|{t.morph}" for doc in nlp.pipe(d.copy() for d in docs) for t in doc]


def bare(doc: Doc) -> Doc:
    """The doc's words and spaces, without annotation.

    doc (Doc): an annotated doc.
    RETURNS (Doc): a new doc with the same words and spaces, in the same vocab.
    """
    return Doc(doc.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])


def parse_spec(spec: str, target: str = "PATH") -> Tuple[str, str, List[str]]:
    """NAME=TARGET[,SECTION.KEY=VALUE...] -> (name, target, the overrides as
    `spacy train` arguments: ["--section.key", "value", ...]).

    target (str): what TARGET is called in the error message (CONFIG, PATH).
    """
    name, _, rest = spec.partition("=")
    value, *overrides = rest.split(",")
    if not name or not value or any("=" not in o for o in overrides):
        raise ValueError(f"expected NAME={target}[,SECTION.KEY=VALUE...], got {spec!r}")
    args: List[str] = []
    for override in overrides:
        key, _, setting = override.partition("=")
        args += [f"--{key}", setting]
    return name, value, args


def words_per_second(
    nlp: Language, docs: List[Doc], *, repeats: int, batch_size: int
) -> Tuple[float, List[float], int]:
    """nlp.pipe words/s on copies of docs, after a warm-up on 50 of them.

    nlp (Language): the pipeline.
    docs (List[Doc]): the docs, copied before each pass.
    repeats (int): how many timed passes.
    batch_size (int): nlp.pipe's batch size.
    RETURNS (Tuple[float, List[float], int]): the median rate, the rate of each
        pass, and the number of words in docs.
    """
    n_words = sum(len(doc) for doc in docs)
    list(nlp.pipe((doc.copy() for doc in docs[:50]), batch_size=batch_size))  # warm-up
    rates = []
    for _ in range(repeats):
        fresh = [doc.copy() for doc in docs]
        start = time.perf_counter()
        for _ in nlp.pipe(fresh, batch_size=batch_size):
            pass
        rates.append(n_words / (time.perf_counter() - start))
    return statistics.median(rates), rates, n_words


def in_turn(
    names: Iterable[str], repeats: int, measure: Callable[[str], float], *, warmup: int = 0
) -> Dict[str, List[float]]:
    """measure(name) of every name in turn, `repeats` rounds, so that a slow
    spell of the machine hits every name alike; first `warmup` untimed rounds
    (the process' heap grows to what every pipeline needs).

    RETURNS (Dict[str, List[float]]): each name's values, in round order.
    """
    names = list(names)
    for _ in range(warmup):
        for name in names:
            measure(name)
    values: Dict[str, List[float]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            values[name].append(measure(name))
    return values


def pipe_rates_in_turn(pipelines: Dict[str, Language], docs: List[Doc], repeats: int) -> Dict[str, List[float]]:
    """`nlp.pipe` words/s (batch 256) of each pipeline on the docs, in turn
    (`in_turn`), one timed pass per pipeline and round, after one untimed round."""
    return in_turn(
        pipelines, repeats, lambda name: words_per_second(pipelines[name], docs, repeats=1, batch_size=256)[0], warmup=1
    )


def make_batch(
    B: int, T: int, K: int, device: str = "cpu", seed: int = 0
) -> Tuple[CRFScores, torch.Tensor, torch.Tensor]:
    """Random CRF scores and gold tags, the first sequence T long and the
    others 1 to T; the same for a seed on every device.

    B (int): batch size. T (int): longest length. K (int): number of tags.
    device (str): where the scores and tags go.
    seed (int): the generator's seed.
    RETURNS (Tuple[CRFScores, torch.Tensor, torch.Tensor]): the scores, the
        tags (B, T), and the lengths (B,), on the host.
    """
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (B,), generator=gen)
    lengths[0] = T
    mask = torch.arange(T) < lengths[:, None]  # shape: (B, T)
    scores = CRFScores(
        torch.randn(B, T, K, generator=gen),
        mask,
        torch.randn(K, K, generator=gen) * 0.1,
        torch.randn(K, generator=gen) * 0.1,
        torch.randn(K, generator=gen) * 0.1,
    )
    tags = torch.randint(K, (B, T), generator=gen)
    return CRFScores(*(x.to(device) for x in scores[:5])), tags.to(device), lengths


def torchcrf_for(scores: CRFScores) -> torch.nn.Module:
    """A pytorch-crf CRF with the transitions of scores, on their device
    (needs the `benchmark` extra).

    scores (CRFScores): the scores whose transitions, start and end it copies.
    RETURNS (torchcrf.CRF): the CRF, batch first.
    """
    from torchcrf import CRF

    K = scores.emissions.shape[2]
    crf = CRF(K, batch_first=True).to(scores.emissions.device)
    with torch.no_grad():
        crf.transitions.copy_(scores.transitions)
        crf.start_transitions.copy_(scores.start)
        crf.end_transitions.copy_(scores.end)
    return crf


def environment() -> dict:
    """Where a benchmark ran: the CPU's model, the logical CPUs, the GPU if
    CUDA is up, and the versions of Python, torch, spaCy and spacy-crf.

    RETURNS (dict): the description, recorded with every benchmark's output.
    """
    import spacy

    import spacy_crf

    cpu = platform.processor() or platform.machine()
    flags: List[str] = []
    with contextlib.suppress(OSError):
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        cpu = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), cpu)
        present = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
        # what decides how fast quantize = "int8" / "bf16" can run
        flags = [flag for flag in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16") if flag in present]
    return {
        "cpu": cpu,
        "cpu_flags": flags,
        "logical_cpus": os.cpu_count(),
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "spacy": spacy.__version__,
        "spacy_crf": spacy_crf.__version__,
        "allocator": _allocator,
    }


def write_json(result: dict, output: Optional[Path]) -> None:
    """Write the result as indented JSON to output, if given, creating its
    folder; the result gains an "environment" entry (see `environment`).

    result (dict): the benchmark's figures.
    output (Optional[Path]): the file, or None.
    """
    if output:
        result = {**result, "environment": result.get("environment") or environment()}
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(json.dumps(result, indent=2))


def report(result: dict, output: Optional[Path]) -> None:
    """Print the result as one JSON line, and write it to output if given.

    result (dict): the benchmark's figures.
    output (Optional[Path]): the file, or None.
    """
    print(json.dumps(result))
    write_json(result, output)


def print_and_write(record: dict, output: Optional[Path]) -> None:
    """Print a script's result as indented JSON and write it to output (its
    folder made), if given."""
    text = json.dumps(record, indent=2)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n")
    print(text)
