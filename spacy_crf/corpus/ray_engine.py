"""The ray engine: Ray Data map_batches over the chunks, with a pool of actors.

The driver ships the pipeline once, as bytes through Ray's object store; each
actor rebuilds it once and then tags chunk after chunk. The chunks are read by
a task pinned to the driver's node, so the input need not be visible from the
other nodes either, and the results stream back to the driver, which writes
the shards. An actor that dies is restarted by Ray and its chunk redone (Ray
Data's actor pools retry by default); a chunk's result reaches the driver
once, from the attempt that finished.
"""

import contextlib
import logging
import pickle
import time
from typing import Any, Dict, Iterator, List, Optional

import numpy
from spacy.language import Language

from ..errors import CorpusErrors
from .inputs import Chunk, ReadOptions, read_chunk
from .pipeline import ChunkResult, ChunkTagger, pipeline_from_payload, pipeline_payload

MAX_BLOCKS = 10000


def import_ray() -> Any:
    """Ray, with Ray Data loaded, or E109 when it is not installed.

    RETURNS (module): the ray module.
    """
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        raise ImportError(CorpusErrors.E109) from err
    return ray


@contextlib.contextmanager
def ray_session(address: Optional[str], *, runtime_env: Optional[Dict[str, Any]] = None) -> Iterator[float]:
    """Join the Ray cluster at `address`, or start a local one (shut down at
    the end); a session that is already up (ray.init in this process) is used
    as it is.

    YIELDS (float): the seconds that ray.init took (0.0 for a session already up).
    """
    ray = import_ray()
    if ray.is_initialized():
        yield 0.0
        return
    start = time.perf_counter()
    ray.init(address=address, runtime_env=runtime_env, include_dashboard=False, logging_level=logging.WARNING)
    try:
        yield time.perf_counter() - start
    finally:
        ray.shutdown()


def _read(batch: Dict[str, numpy.ndarray], *, options: ReadOptions) -> Dict[str, numpy.ndarray]:
    """Ray Data stage 1 (a task on the driver's node): read chunks."""
    out = []
    for item in batch["chunk"]:
        chunk: Chunk = pickle.loads(item)
        out.append(pickle.dumps(read_chunk(chunk, options=options, on_error="skip"), protocol=pickle.HIGHEST_PROTOCOL))
    return {"chunk": numpy.array(out, dtype=object)}


class _TagActor:
    """Ray Data stage 2 (an actor): load the pipeline once, tag chunks."""

    def __init__(self, payload: Any, *, output_format: str, batch_size: int, use_gpu: bool) -> None:
        import ray
        import spacy

        if use_gpu:
            spacy.require_gpu()
        if isinstance(payload, list):  # [ObjectRef]: fetched here, not by Ray
            payload = ray.get(payload[0])
        self.tagger = ChunkTagger(pipeline_from_payload(payload), output_format=output_format, batch_size=batch_size)

    def __call__(self, batch: Dict[str, numpy.ndarray]) -> Dict[str, numpy.ndarray]:
        out = []
        for item in batch["chunk"]:
            result = self.tagger(pickle.loads(item))
            out.append(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        return {"result": numpy.array(out, dtype=object)}


def run_ray(
    nlp: Language,
    chunks: List[Chunk],
    *,
    options: ReadOptions,
    output_format: str,
    workers: int,
    gpus_per_worker: float,
    batch_size: int,
) -> Iterator[ChunkResult]:
    """Tag chunks on the Ray cluster of this process's session (ray_session).

    nlp (Language): the pipeline, shipped to the actors as bytes.
    chunks (List[Chunk]): the chunks to tag.
    options (ReadOptions): the text and id fields.
    output_format (str): one of writers.OUTPUT_FORMATS.
    workers (int): actors in the pool.
    gpus_per_worker (float): GPUs per actor; > 0 runs spaCy on the GPU.
    batch_size (int): nlp.pipe's batch size.
    YIELDS (ChunkResult): each chunk once tagged, in no set order.
    """
    ray = import_ray()
    workers = min(workers, len(chunks))  # no idle actors
    from ray.data import ActorPoolStrategy, DataContext, TaskPoolStrategy

    context = DataContext.get_current()
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    payload = ray.put(pipeline_payload(nlp))  # held here until the job ends
    driver_node = f"node:{ray.util.get_node_ip_address()}"
    items = [{"chunk": pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)} for chunk in chunks]
    # a block is the unit that moves between stages: one chunk per block
    # spreads the chunks evenly over the actors (capped, for huge inputs)
    dataset = ray.data.from_items(items, override_num_blocks=min(len(items), MAX_BLOCKS))
    dataset = dataset.map_batches(
        _read,
        batch_size=1,
        fn_kwargs={"options": options},
        compute=TaskPoolStrategy(size=1),
        num_cpus=0,
        resources={driver_node: 0.001},
    )
    dataset = dataset.map_batches(
        _TagActor,
        batch_size=1,
        fn_constructor_args=([payload],),
        fn_constructor_kwargs={
            "output_format": output_format,
            "batch_size": batch_size,
            "use_gpu": gpus_per_worker > 0,
        },
        compute=ActorPoolStrategy(size=workers),
        num_cpus=1,
        num_gpus=gpus_per_worker or None,
    )
    ray_data_logger = logging.getLogger("ray.data")
    level = ray_data_logger.level
    ray_data_logger.setLevel(logging.ERROR)  # our progress bar replaces Ray Data's
    try:
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            for item in batch["result"]:
                yield pickle.loads(item)
    finally:
        ray_data_logger.setLevel(level)
