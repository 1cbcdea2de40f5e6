"""The local engine: nlp.pipe on one machine, in this process or in a pool of
processes (the n_process of nlp.pipe, with the work cut as for Ray).

Each chunk goes through its own nlp.pipe call, in this process (workers=1)
or in one of `workers` processes that each rebuild the pipeline once from its
bytes. The docs of a batch are the docs of a chunk, whichever engine and
however many workers: the output is the same, byte for byte. The worker
processes end when the process that started them dies, killed or not.
"""

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Deque, Dict, Iterable, Iterator, Optional

from spacy.language import Language

from ..optional import has_torch
from .inputs import Chunk, ChunkData, ReadOptions, read_chunk
from .pipeline import ChunkResult, ChunkTagger, pipeline_from_payload, pipeline_payload

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
WATCH_SECONDS = 1.0  # between a worker's checks that its parent lives
_WORKER_TAGGER: Optional[ChunkTagger] = None


def _init_worker(payload: Dict[str, Any], output_format: str, batch_size: int, driver: int) -> None:
    global _WORKER_TAGGER
    _die_with_parent(driver)
    if has_torch():
        import torch

        torch.set_num_threads(1)  # one core per worker process
    _WORKER_TAGGER = ChunkTagger(pipeline_from_payload(payload), output_format=output_format, batch_size=batch_size)


def _die_with_parent(driver: int) -> None:
    """End this worker process when its parent dies, even by kill -9: on
    Linux the kernel sends it SIGKILL (prctl PR_SET_PDEATHSIG); elsewhere, and
    as a fallback, a daemon thread checks every WATCH_SECONDS whether the
    process was handed to a new parent.

    driver (int): the pid of the process that started the pool, which must
        still be alive.
    """
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    try:  # the driver may have died before the prctl took effect
        os.kill(driver, 0)
    except ProcessLookupError:
        os._exit(1)
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def _tag_in_worker(data: ChunkData) -> ChunkResult:
    assert _WORKER_TAGGER is not None
    return _WORKER_TAGGER(data)


def run_local(
    nlp: Language,
    chunks: Iterable[Chunk],
    *,
    options: ReadOptions,
    output_format: str,
    workers: int,
    batch_size: int,
) -> Iterator[ChunkResult]:
    """Tag chunks on this machine, in input order.

    nlp (Language): the pipeline.
    chunks (Iterable[Chunk]): the chunks to tag.
    options (ReadOptions): the text and id fields.
    output_format (str): one of writers.OUTPUT_FORMATS.
    workers (int): 1 tags in this process; more starts a pool of processes.
    batch_size (int): nlp.pipe's batch size.
    YIELDS (ChunkResult): each chunk once tagged, in input order.
    """
    if workers == 1:
        tagger = ChunkTagger(nlp, output_format=output_format, batch_size=batch_size)
        for chunk in chunks:
            yield tagger(read_chunk(chunk, options=options, on_error="skip"))
        return
    # the default start method, as nlp.pipe(n_process=...) uses; a process
    # that dies breaks the pool and fails the job (a rerun resumes it)
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context(),
        initializer=_init_worker,
        initargs=(pipeline_payload(nlp), output_format, batch_size, os.getpid()),
    )
    pending: Deque["Future[ChunkResult]"] = deque()
    try:
        for chunk in chunks:
            pending.append(pool.submit(_tag_in_worker, read_chunk(chunk, options=options, on_error="skip")))
            if len(pending) >= 2 * workers:  # bounded read-ahead
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
