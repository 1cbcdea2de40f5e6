"""A worker killed mid-run on the ray engine, injected from the tests alone.

The ray engine ships no fault hook: test_corpus_ray.py starts its Ray cluster
with `runtime_env(fault_dir)`, whose `worker_process_setup_hook` runs
`wrap_tag_actor` in every worker of the job as it starts. The wrapper lets the
engine's tagging actor work as usual until a test arms the fault
(`one_actor_killed`): then the first actor to get a chunk creates the marker
file and exits on the spot (os._exit, as a killed process: no cleanup, no
reply). The marker is created with O_EXCL, so exactly one actor dies.

The hook itself imports nothing heavy: it wraps the actor when the worker
imports the ray engine (a tagging actor or a reading task does), so that
Ray's own workers (Ray Data's bookkeeping actors, idle workers) do not import
spaCy for nothing: every worker start costs seconds on a busy 2-core machine.
"""

import contextlib
import importlib.abc
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Sequence

FAULT_DIR_ENV = "SPACY_CRF_TEST_FAULT_DIR"
ARMED = "armed"
KILLED = "killed"
ROOT = Path(__file__).parent.parent


def runtime_env(fault_dir: Path, threads: int) -> Dict[str, Any]:
    """Ray's runtime_env for a job whose workers can be armed to kill an actor.

    fault_dir (Path): the folder of the arming file and the marker.
    threads (int): the torch thread count of the test process, given to the
        workers too, so that both engines compute alike whatever
        OMP_NUM_THREADS the tests were started with.
    RETURNS (Dict[str, Any]): the setup hook, and the environment its workers
        need to import it (this repository on PYTHONPATH) and to find fault_dir.
    """
    python_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {
        "worker_process_setup_hook": f"{__name__}.wrap_tag_actor",
        "env_vars": {FAULT_DIR_ENV: str(fault_dir), "PYTHONPATH": python_path, "OMP_NUM_THREADS": str(threads)},
    }


RAY_ENGINE = "spacy_crf.corpus.ray_engine"


def wrap_tag_actor() -> None:
    """The setup hook: wrap the tagging actor's __call__ in this worker, now
    if the ray engine is imported already, else as soon as it is."""
    if RAY_ENGINE in sys.modules:
        _wrap(sys.modules[RAY_ENGINE])
    else:
        sys.meta_path.insert(0, _WrapOnImport())


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Finds the ray engine as the other finders do, and wraps its actor once
    the module has run; then leaves sys.meta_path."""

    def find_spec(self, name: str, path: Optional[Sequence[str]], target: Any = None) -> Any:
        if name != RAY_ENGINE:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        exec_module = spec.loader.exec_module

        def exec_and_wrap(module: Any) -> None:
            exec_module(module)
            _wrap(module)

        spec.loader.exec_module = exec_and_wrap
        return spec


def _wrap(ray_engine: Any) -> None:
    fault_dir = Path(os.environ[FAULT_DIR_ENV])
    tag = ray_engine._TagActor.__call__

    def call(self: Any, batch: Dict[str, Any]) -> Dict[str, Any]:
        if (fault_dir / ARMED).exists():
            try:
                os.close(os.open(fault_dir / KILLED, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                pass  # another actor died already
            else:
                os._exit(1)
        return tag(self, batch)

    ray_engine._TagActor.__call__ = call


@contextlib.contextmanager
def one_actor_killed(fault_dir: Path) -> Iterator[Path]:
    """Arm the fault for the block: the first actor to get a chunk dies.

    fault_dir (Path): the folder given to runtime_env.
    YIELDS (Path): the marker file, which exists once an actor died.
    """
    marker = fault_dir / KILLED
    marker.unlink(missing_ok=True)
    (fault_dir / ARMED).touch()
    try:
        yield marker
    finally:
        (fault_dir / ARMED).unlink()
