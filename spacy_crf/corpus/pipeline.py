"""The pipeline side of corpus tagging: load a pipeline, find its spacy-crf
components, ship it to workers as bytes, and tag the records of a chunk.

Only spaCy's public API of a loaded pipeline is used (`spacy.load`,
`nlp.pipe`, `nlp.to_bytes`/`from_bytes`, the components' `cfg`), so any
pipeline with a spacy-crf component works, whatever its other components.
"""

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Tuple, Union

import spacy
from spacy.language import Language
from spacy.tokens import Doc
from thinc.api import Config

from ..components import CRFComponent
from ..errors import CorpusErrors
from .inputs import ChunkData, Shard, bad_record
from .outputs import Outputs, encode_chunk

_WORKER = f"{socket.gethostname()}:{os.getpid()}"


def load_pipeline(model: Union[str, Path]) -> Language:
    """Load a pipeline and check that it has a spacy-crf component.

    model (Union[str, Path]): a pipeline folder or an installed package name.
    RETURNS (Language): the pipeline.
    """
    try:
        nlp = spacy.load(model)
    except (OSError, IOError, ValueError, ImportError) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(CorpusErrors.E103.format(model=model, reason=reason)) from err
    outputs_of(nlp, model=str(model))
    return nlp


def outputs_of(nlp: Language, *, model: str = "pipeline") -> Outputs:
    """What the pipeline's spacy-crf components write.

    nlp (Language): the pipeline.
    model (str): its name, for the error message.
    RETURNS (Outputs): the targets ("tag", "pos", "morph", "ents") and whether
        token._.crf_confidence is set.
    """
    targets, confidence = [], False
    for _name, proc in nlp.pipeline:
        if not isinstance(proc, CRFComponent):
            continue
        cfg = proc.cfg
        for target in cfg["target"].split("+"):  # "tag+pos" writes both, ...
            if target not in targets:
                targets.append(target)
        confidence = confidence or cfg["store_confidence"]
    if not targets:
        raise ValueError(CorpusErrors.E104.format(model=model, components=list(nlp.pipe_names)))
    return Outputs(targets=tuple(sorted(targets)), confidence=confidence)


def pipeline_payload(nlp: Language) -> Dict[str, Any]:
    """Everything a worker needs to rebuild the pipeline: its config and bytes.

    nlp (Language): the pipeline.
    RETURNS (Dict[str, Any]): {"config": str, "bytes": bytes}.
    """
    return {"config": nlp.config.to_str(), "bytes": nlp.to_bytes()}


def pipeline_from_payload(payload: Dict[str, Any]) -> Language:
    """Rebuild a pipeline from `pipeline_payload`'s output.

    payload (Dict[str, Any]): the config and the bytes.
    RETURNS (Language): the pipeline.
    """
    config = Config().from_str(payload["config"], interpolate=False)
    nlp = spacy.util.load_model_from_config(config, auto_fill=False, validate=False)
    return nlp.from_bytes(payload["bytes"])


def make_input(nlp: Language, record: Dict[str, Any]) -> Union[str, Doc]:
    """A record as nlp.pipe takes it: its text, or a Doc of its tokens."""
    if record["words"] is not None:
        return Doc(nlp.vocab, words=record["words"], spaces=record["spaces"])
    return record["text"]


@dataclass
class ChunkResult:
    """A tagged chunk: the encoded output and its counts.

    shard (str): the shard's name.
    index (int): the chunk's index within the shard.
    payload (bytes): the output of the chunk's docs (see writers.encode_chunk).
    docs (int): documents tagged.
    words (int): tokens tagged.
    bad (List[Dict[str, Any]]): the chunk's bad records (readers.bad_record),
        in input order.
    started (float): when tagging the chunk began (time.time() where it ran).
    finished (float): when it ended.
    worker (str): the process that tagged it ("host:pid").
    """

    shard: str
    index: int
    payload: bytes
    docs: int
    words: int
    bad: List[Dict[str, Any]]
    started: float = 0.0
    finished: float = 0.0
    worker: str = ""


class ChunkTagger:
    """Tags the records of a chunk with a pipeline and encodes the output.

    A record that fails anywhere (spaCy's tokenizer, the model, encoding its
    output) is a bad record, and its batch-mates are kept: texts that spaCy
    refuses (over nlp.max_length, lone surrogates) are screened out before
    the batch, and a batch that fails all the same is retried one record at
    a time to find the ones at fault, then tagged again without them.

    nlp (Language): the pipeline.
    output_format (str): "docbin", "parquet" or "jsonl".
    batch_size (int): nlp.pipe's batch size.
    """

    def __init__(self, nlp: Language, *, output_format: str, batch_size: int) -> None:
        self.nlp = nlp
        self.outputs = outputs_of(nlp)
        self.output_format = output_format
        self.batch_size = batch_size

    def __call__(self, data: ChunkData) -> ChunkResult:
        """Tag a chunk's records with one nlp.pipe call and encode the docs.

        data (ChunkData): the chunk, its good records and its bad ones (passed through).
        RETURNS (ChunkResult): the encoded output and its counts.
        """
        started = time.time()
        shard = data.chunk.shard
        bad = list(data.bad)
        records = [record for record in data.records if self._screen(shard, record, bad)]
        try:
            docs, payload = self._tag(records)
        except Exception:  # find the records at fault, then tag the others together
            docs, payload = self._tag(self._isolate(shard, records, bad))
        bad.sort(key=lambda entry: entry["position"])
        n_words = sum(len(doc) for doc in docs)
        return ChunkResult(
            shard.name, data.chunk.index, payload, len(docs), n_words, bad, started, time.time(), _WORKER
        )

    def _tag(self, records: List[Dict[str, Any]]) -> Tuple[List[Doc], bytes]:
        docs = list(self.nlp.pipe((make_input(self.nlp, r) for r in records), batch_size=self.batch_size))
        return docs, encode_chunk(docs, records, output_format=self.output_format, outputs=self.outputs)

    def _screen(self, shard: Shard, record: Dict[str, Any], bad: List[Dict[str, Any]]) -> bool:
        """Whether spaCy takes the record's text; a bad record (E114) if not."""
        text = record["text"]
        if text is None:
            return True
        if len(text) > self.nlp.max_length:
            reason = f"its text has {len(text):,} characters, over the pipeline's max_length of {self.nlp.max_length:,}"
        elif text.isascii():
            return True
        else:
            try:
                text.encode("utf8")
                return True
            except UnicodeEncodeError as err:
                reason = f"its text has a lone surrogate, {text[err.start]!r} at character {err.start}"
        bad.append(bad_record(shard, record["position"], "E114", reason, record["id"]))
        return False

    def _isolate(self, shard: Shard, records: List[Dict[str, Any]], bad: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
        """The records that tag on their own (E114 if not) and whose output
        encodes along with the ones kept before them (E115 if not)."""
        kept: List[Dict[str, Any]] = []
        docs: List[Doc] = []
        for record in records:
            try:
                doc = next(iter(self.nlp.pipe([make_input(self.nlp, record)])))
            except Exception as err:
                bad.append(bad_record(shard, record["position"], "E114", _reason(err), record["id"]))
                continue
            try:
                encode_chunk(docs + [doc], kept + [record], output_format=self.output_format, outputs=self.outputs)
            except Exception as err:
                bad.append(bad_record(shard, record["position"], "E115", _reason(err), record["id"]))
                continue
            docs.append(doc)
            kept.append(record)
        return kept


def _reason(err: Exception) -> str:
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__
