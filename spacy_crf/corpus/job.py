"""tag_corpus: tag a corpus with a pipeline of spacy-crf components, shard by shard, on the
local engine (nlp.pipe) or the ray engine (Ray Data), resumably."""

import hashlib
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Union

import spacy

from ..errors import BadRecordError, CorpusErrors
from .inputs import (
    INPUT_FORMATS,
    SUFFIXES,
    Chunk,
    ReadOptions,
    Shard,
    find_input_files,
    input_changed,
    plan_shards,
)
from .outputs import (
    OUTPUT_FORMATS,
    check_job,
    clear_job,
    file_entry,
    job_lock,
    read_manifest,
    remove_temporary_files,
    verify_shard,
    write_bad_records,
    write_manifest,
    write_shard,
)
from .parquet import import_pyarrow
from .pipeline import ChunkResult, load_pipeline

ENGINES = ("local", "ray")
ON_ERROR = ("skip", "raise")


@dataclass
class TagSummary:
    """What a tag_corpus run did.

    docs (int): documents tagged in this run.
    words (int): tokens tagged in this run.
    seconds (float): wall time of the run, start-up included.
    startup_seconds (float): of which starting or joining Ray (0 for local).
    words_per_second (float): words / seconds.
    steady_words_per_second (float): words/s once the workers are up: the
        sum over workers of the words each tagged over its span from the start
        of its first chunk to the end of its last. Start-up (Ray, worker
        processes, loading the pipeline) is left out; waits between chunks count.
    shards (int): shards of the whole input.
    shards_written (int): shards tagged and written in this run.
    shards_skipped (int): shards already complete from an earlier run.
    shards_redone (int): shards listed as complete whose files failed their
        check (missing, truncated, another sha256), tagged again.
    bad_records (int): records of this run that could not be read, tagged or
        written, each reported in bad_records/.
    bad_messages (List[str]): the first 20 of their messages.
    output (str): the output folder.
    """

    docs: int = 0
    words: int = 0
    seconds: float = 0.0
    startup_seconds: float = 0.0
    words_per_second: float = 0.0
    steady_words_per_second: float = 0.0
    shards: int = 0
    shards_written: int = 0
    shards_skipped: int = 0
    shards_redone: int = 0
    bad_records: int = 0
    bad_messages: List[str] = field(default_factory=list)
    output: str = ""

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def tag_corpus(
    model: Union[str, Path],
    input: Union[str, Path],
    output: Union[str, Path],
    *,
    engine: str = "local",
    workers: int = 1,
    gpus_per_worker: float = 0.0,
    batch_size: int = 64,
    shard_size: int = 10000,
    input_format: Optional[str] = None,
    output_format: str = "docbin",
    text_field: str = "text",
    id_field: str = "id",
    on_error: str = "skip",
    address: Optional[str] = None,
    runtime_env: Optional[Dict[str, Any]] = None,
    max_shards: Optional[int] = None,
    overwrite: bool = False,
    progress: bool = True,
) -> TagSummary:
    """Tag every document of a corpus once and write the output shard by shard.

    A rerun into the same output folder skips the shards that are complete
    (their files checked against the manifest's sizes and sha256), so a job
    that was stopped or killed resumes where it stopped; it refuses an input
    that changed since the job began (E116). Every record ends up once, in
    the shards or in bad_records/.

    model (Union[str, Path]): a pipeline folder or an installed package name,
        with a spacy-crf component (crf_tagger, crf_morphologizer, crf_ner).
    input (Union[str, Path]): a file or a folder of files (JSON Lines, plain
        text with one document per line, Parquet, spaCy DocBin). Parquet
        input and output need pyarrow (pip install "spacy-crf[corpus]").
    output (Union[str, Path]): the output folder.
    engine (str): "local" (nlp.pipe) or "ray" (Ray Data).
    workers (int): processes (local engine) or Ray actors (ray engine), one core each.
    gpus_per_worker (float): GPUs per worker; > 0 runs spaCy on the GPU.
    batch_size (int): documents per nlp.pipe batch, and per chunk of work.
    shard_size (int): records per shard; a larger file gives several shards.
    input_format (Optional[str]): "jsonl", "text", "parquet" or "docbin";
        None tells each file's format from its suffix.
    output_format (str): "docbin", "parquet" or "jsonl".
    text_field (str): the JSON field or Parquet column of the text.
    id_field (str): the field or column carried through as the id.
    on_error (str): a bad record (one that cannot be read, tagged or
        written) is "skip"ped, counted and reported, or "raise"s.
    address (Optional[str]): a Ray cluster to join ("auto", "host:6379");
        None starts a local one (ray engine only).
    runtime_env (Optional[Dict[str, Any]]): Ray's runtime environment for the
        job, e.g. {"py_modules": [...]}, when the ray engine starts Ray.
    max_shards (Optional[int]): tag at most this many of the shards left,
        then stop (a rerun goes on).
    overwrite (bool): start over: delete the shards, bad records, manifest
        and settings of an earlier job in the output folder first (other
        files stay, and so do listed files outside the folder).
    progress (bool): show a progress bar on stderr.
    RETURNS (TagSummary): counts and speed of this run.
    """
    _check_options(
        engine=engine,
        workers=workers,
        gpus_per_worker=gpus_per_worker,
        batch_size=batch_size,
        shard_size=shard_size,
        input_format=input_format,
        output_format=output_format,
        on_error=on_error,
    )
    start_time = time.perf_counter()
    input_path, output_path = Path(input), Path(output)
    _check_paths(input_path, output_path)
    options = ReadOptions(text_field=text_field, id_field=id_field)
    shards, chunks = plan_shards(
        input_path, input_format=input_format, shard_size=shard_size, batch_size=batch_size, options=options
    )
    if not shards:
        files = find_input_files(input_path, input_format=input_format)
        reason = "its files hold no records" if files else f"no files of a known suffix ({', '.join(SUFFIXES)})"
        raise ValueError(CorpusErrors.E102.format(path=input_path, reason=reason))
    if engine == "local" and gpus_per_worker > 0:
        spacy.require_gpu()
    nlp = load_pipeline(model)

    try:
        output_path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ValueError(CorpusErrors.E118.format(path=output_path, reason=err.strerror or err)) from err
    with job_lock(output_path):
        if overwrite:
            clear_job(output_path)
        check_job(
            output_path,
            {
                "version": 2,
                "input": str(input_path.resolve()),
                "input_format": input_format,
                "output_format": output_format,
                "shard_size": shard_size,
                "text_field": text_field,
                "id_field": id_field,
                "model": f"{nlp.meta.get('lang', '')}_{nlp.meta.get('name', '')}-{nlp.meta.get('version', '')}",
                "model_sha256": hashlib.sha256(nlp.to_bytes()).hexdigest(),
            },
            {shard.source: {"size": shard.size, "sha256": shard.sha256} for shard in shards},
        )
        remove_temporary_files(output_path)
        done = read_manifest(output_path)
        todo = []
        for shard in shards:
            if shard.name in done:
                problem = verify_shard(output_path, done[shard.name], start=shard.start, stop=shard.stop)
                if problem is None:
                    continue
                print(f"redoing shard {shard.name}, listed as complete: {problem}", file=sys.stderr)
            todo.append(shard)
        summary = TagSummary(shards=len(shards), shards_skipped=len(shards) - len(todo), output=str(output_path))
        if max_shards is not None:
            todo = todo[:max_shards]
        summary.shards_redone = sum(shard.name in done for shard in todo)
        work = [chunk for shard in todo for chunk in chunks[shard.name]]
        if work:
            _run(
                nlp,
                todo,
                work,
                _Manifest(output_path, done),
                summary,
                engine=engine,
                workers=workers,
                gpus_per_worker=gpus_per_worker,
                batch_size=batch_size,
                output_format=output_format,
                options=options,
                on_error=on_error,
                address=address,
                runtime_env=runtime_env,
                progress=progress,
            )
    summary.seconds = time.perf_counter() - start_time
    summary.words_per_second = summary.words / summary.seconds if summary.seconds else 0.0
    return summary


def _check_options(
    *,
    engine: str,
    workers: int,
    gpus_per_worker: float,
    batch_size: int,
    shard_size: int,
    input_format: Optional[str],
    output_format: str,
    on_error: str,
) -> None:
    for setting, value, options in (
        ("engine", engine, ENGINES),
        ("output format", output_format, OUTPUT_FORMATS),
        ("on_error", on_error, ON_ERROR),
    ):
        if value not in options:
            raise ValueError(CorpusErrors.E107.format(setting=setting, value=value, options=list(options)))
    if input_format is not None and input_format not in INPUT_FORMATS:
        raise ValueError(
            CorpusErrors.E107.format(setting="input format", value=input_format, options=list(INPUT_FORMATS))
        )
    for setting, number, minimum in (
        ("workers", workers, 1),
        ("batch_size", batch_size, 1),
        ("shard_size", shard_size, 1),
        ("gpus_per_worker", gpus_per_worker, 0),
    ):
        if number < minimum:
            raise ValueError(CorpusErrors.E111.format(setting=setting, minimum=minimum, value=number))
    if engine == "local" and gpus_per_worker > 0 and workers > 1:
        raise ValueError(CorpusErrors.E112.format(workers=workers, gpus=gpus_per_worker))
    # the optional dependencies, here rather than when they are first used,
    # so that a job that cannot run fails before it writes anything
    if output_format == "parquet":
        import_pyarrow(action="Writing")
    if engine == "ray":
        from .ray_engine import import_ray

        import_ray()


def _check_paths(input_path: Path, output_path: Path) -> None:
    """Refuse an output folder that overlaps the input (E117) or is a file (E118)."""
    source, target = input_path.resolve(), output_path.resolve()
    relation = (
        "is"
        if target == source
        else "is inside"
        if target.is_relative_to(source)
        else ("holds" if source.is_relative_to(target) else None)
    )
    if relation is not None:
        raise ValueError(CorpusErrors.E117.format(output=output_path, relation=relation, input=input_path))
    if output_path.exists() and not output_path.is_dir():
        raise ValueError(CorpusErrors.E118.format(path=output_path, reason="it is a file"))


class _Manifest:
    """The manifest's entries, written out whole as shards finish: after each
    one, or, where writing it takes long (very many shards), at most a tenth
    of the time."""

    def __init__(self, output: Path, entries: Dict[str, Dict[str, Any]]) -> None:
        self.output = output
        self.entries = entries
        self.pending = False
        self.written = 0.0  # time.monotonic() of the last write
        self.cost = 0.0  # seconds it took

    def add(self, entry: Dict[str, Any]) -> None:
        self.entries[entry["shard"]] = entry
        self.pending = True
        if time.monotonic() - self.written >= 9 * self.cost:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            start = time.monotonic()
            write_manifest(self.output, self.entries)
            self.written = time.monotonic()
            self.cost = self.written - start
            self.pending = False


def _run(
    nlp: Any,
    todo: List[Shard],
    work: List[Chunk],
    manifest: _Manifest,
    summary: TagSummary,
    *,
    engine: str,
    workers: int,
    gpus_per_worker: float,
    batch_size: int,
    output_format: str,
    options: ReadOptions,
    on_error: str,
    address: Optional[str],
    runtime_env: Optional[Dict[str, Any]],
    progress: bool,
) -> None:
    """Tag the chunks on an engine; write each shard (its output, then its bad
    records, then its manifest entry) as soon as all its chunks are in."""
    from tqdm import tqdm

    output = manifest.output
    n_chunks = {shard.name: 0 for shard in todo}
    for chunk in work:
        n_chunks[chunk.shard.name] += 1
    by_name = {shard.name: shard for shard in todo}
    received: Dict[str, Dict[int, ChunkResult]] = {name: {} for name in n_chunks}
    spans: Dict[str, List[float]] = {}  # worker -> [first start, last end, words]
    bar = tqdm(
        total=sum(c.stop - c.start for c in work),
        unit="doc",
        disable=not progress,
        file=sys.stderr,
        desc=f"tagging ({engine})",
        dynamic_ncols=True,
    )
    try:
        for result in _results(
            nlp,
            work,
            engine=engine,
            workers=workers,
            gpus_per_worker=gpus_per_worker,
            batch_size=batch_size,
            output_format=output_format,
            options=options,
            address=address,
            runtime_env=runtime_env,
            summary=summary,
        ):
            if result.bad and on_error == "raise":
                raise BadRecordError(result.bad[0]["message"])
            received[result.shard][result.index] = result
            span = spans.setdefault(result.worker, [result.started, result.finished, 0])
            span[0], span[1], span[2] = (
                min(span[0], result.started),
                max(span[1], result.finished),
                span[2] + result.words,
            )
            summary.docs += result.docs
            summary.words += result.words
            summary.bad_records += len(result.bad)
            room = 20 - len(summary.bad_messages)
            summary.bad_messages.extend(entry["message"] for entry in result.bad[: max(room, 0)])
            for entry in result.bad:
                bar.write(f"skipped: {entry['message']}", file=sys.stderr)
            bar.update(result.docs + len(result.bad))
            elapsed = bar.format_dict["elapsed"]
            bar.set_postfix_str(f"{summary.words / elapsed if elapsed else 0:,.0f} words/s", refresh=False)
            parts = received[result.shard]
            if len(parts) == n_chunks[result.shard]:
                shard = by_name[result.shard]
                changed = input_changed(shard)
                if changed is not None:
                    raise ValueError(CorpusErrors.E122.format(file=shard.path, detail=changed))
                ordered = [parts[i] for i in range(len(parts))]
                bad = [entry for part in ordered for entry in part.bad]
                try:
                    name = write_shard(
                        output, shard.name, (part.payload for part in ordered), output_format=output_format
                    )
                except Exception as err:  # e.g. Parquet columns whose types differ from chunk to chunk
                    raise ValueError(CorpusErrors.E119.format(shard=shard.name, path=output, reason=err)) from err
                bad_name = write_bad_records(output, shard.name, bad)
                manifest.add(
                    {
                        "shard": shard.name,
                        **file_entry(output, name),
                        "source": shard.source,
                        "start": shard.start,
                        "stop": shard.stop,
                        "docs": sum(part.docs for part in ordered),
                        "words": sum(part.words for part in ordered),
                        "bad_records": len(bad),
                        "bad": None if bad_name is None else file_entry(output, bad_name),
                    }
                )
                del received[result.shard]
                summary.shards_written += 1
    finally:
        manifest.flush()
        bar.close()
    summary.steady_words_per_second = sum(words / (end - start) for start, end, words in spans.values() if end > start)


def _results(
    nlp: Any,
    work: List[Chunk],
    *,
    engine: str,
    workers: int,
    gpus_per_worker: float,
    batch_size: int,
    output_format: str,
    options: ReadOptions,
    address: Optional[str],
    runtime_env: Optional[Dict[str, Any]],
    summary: TagSummary,
) -> Iterator[ChunkResult]:
    if engine == "local":
        from .local import run_local

        yield from run_local(
            nlp, work, options=options, output_format=output_format, workers=workers, batch_size=batch_size
        )
        return
    from .ray_engine import ray_session, run_ray

    with ray_session(address, runtime_env=runtime_env) as startup_seconds:
        summary.startup_seconds = startup_seconds
        yield from run_ray(
            nlp,
            work,
            options=options,
            output_format=output_format,
            workers=workers,
            gpus_per_worker=gpus_per_worker,
            batch_size=batch_size,
        )
