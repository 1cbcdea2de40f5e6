"""The local engine: nlp.pipe on one machine, with n_process for several cores."""
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, Iterable, Iterator, List, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc

from .pipeline import ChunkResult, ChunkTagger, make_input
from .readers import Chunk, ReadOptions, read_chunk


@dataclass
class _Pending:
    chunk: Chunk
    records: List[Dict[str, Any]]
    bad: List[str]
    docs: List[Doc] = field(default_factory=list)


def run_local(
    nlp: Language,
    chunks: Iterable[Chunk],
    *,
    options: ReadOptions,
    output_format: str,
    workers: int,
    batch_size: int,
) -> Iterator[ChunkResult]:
    """Tag chunks with one nlp.pipe over all their records, in order.

    nlp (Language): the pipeline.
    chunks (Iterable[Chunk]): the chunks to tag.
    options (ReadOptions): the text and id fields.
    output_format (str): one of writers.OUTPUT_FORMATS.
    workers (int): nlp.pipe's n_process.
    batch_size (int): nlp.pipe's batch size.
    YIELDS (ChunkResult): each chunk once tagged, in input order.
    """
    tagger = ChunkTagger(nlp, output_format=output_format, batch_size=batch_size)
    queue: Deque[_Pending] = deque()

    def stream() -> Iterator[Tuple[Union[str, Doc], None]]:
        # nlp.pipe reads ahead of what it yields: the queue holds every chunk
        # whose records were handed over and whose docs are not all back yet
        for chunk in chunks:
            data = read_chunk(chunk, options=options, on_error="skip")
            queue.append(_Pending(chunk, data.records, data.bad))
            for record in data.records:
                yield make_input(nlp, record), None

    def finished() -> Iterator[ChunkResult]:
        while queue and len(queue[0].docs) == len(queue[0].records):
            done = queue.popleft()
            yield tagger.encode(done.chunk.shard.name, done.chunk.index, done.records, done.docs, done.bad)

    for doc, _ in nlp.pipe(stream(), as_tuples=True, batch_size=batch_size, n_process=workers):
        yield from finished()
        queue[0].docs.append(doc)
        yield from finished()
    yield from finished()
