"""How many CPU threads the component's torch (and numpy BLAS) work runs on.

torch's default intra-op pool has one OpenMP thread per core, and every
parallel region waits for all of them. When another process keeps a core busy
(a second training, a notebook, a test run) the pool waits for a thread that
is not running, and two OpenMP pools spinning against each other collapse:
training and `nlp.pipe` become up to 10x slower. The component's batches are
small, so one thread is as fast when the machine is quiet.

The component therefore runs its torch work inside `torch_threads(setting)`:

    setting > 0   exactly that many threads
    setting == 0  ("auto", the default) one thread, unless the process chose a
                  count itself, which is then kept: OMP_NUM_THREADS or
                  MKL_NUM_THREADS set in the environment, or
                  torch.set_num_threads(n) called with a count torch would
                  not pick itself (one thread per physical core, per logical
                  CPU, or per CPU the process may run on)

(`update` under an upstream transformer keeps the process's count with
"auto": the transformer's backward pass runs inside it; see
components/training.py.)

The same count holds for numpy's BLAS (OpenBLAS, whose pool of one thread per
core spins the same way) in the Thinc layers the component runs, through
threadpoolctl.

Calls from several threads (a threaded web server): torch's count is per OS
thread (OpenMP's), so each call sets its own thread's count and puts it back
on exit, and never changes another thread's. A thread's count before its first
call is the process's, also when the thread first used torch during another
thread's call (torch copies the count in force then). The BLAS limit is
process-wide: the first of the concurrent calls sets it, the last one to
finish puts back what was there before any of them (under a lock), so
concurrent calls run under the first one's BLAS limit. No spaCy.
"""

import contextlib
import functools
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, FrozenSet, Iterator, Optional, TypeVar, cast

from .optional import has_torch

if TYPE_CHECKING or has_torch():
    import torch

from .errors import Errors

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
# The most threads the `threads` setting asks for: OpenMP creates them all at
# the first parallel region, and where it cannot, it ends the process
# (libgomp: "Thread creation failed"), with nothing to catch. A process that
# needs more sets OMP_NUM_THREADS (or torch.set_num_threads) and threads = 0.
MAX_THREADS = 256
THREADS_ALLOWED = f"0 (auto) or a count from 1 to {MAX_THREADS} (for more, set threads = 0 and OMP_NUM_THREADS)"


_no_torch_threads = threading.local()


def _get_num_threads() -> int:
    """torch.get_num_threads(); without torch, the count last set in this
    thread (the BLAS limit is then all the setting changes)."""
    if has_torch():
        return torch.get_num_threads()
    return int(getattr(_no_torch_threads, "count", torch_default_threads()))


def _set_num_threads(n: int) -> None:
    if has_torch():
        torch.set_num_threads(n)
    else:
        _no_torch_threads.count = n


@lru_cache(maxsize=1)
def torch_default_threads() -> int:
    """torch's default intra-op thread count where it can be read off the
    machine: one per physical core (as torch's cpuinfo counts them), or the
    logical CPU count where the topology is not readable."""
    cores = set()
    for topology in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology"):
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            continue
        cores.add((package, core))
    return len(cores) or os.cpu_count() or 1


@lru_cache(maxsize=1)
def possible_defaults() -> FrozenSet[int]:
    """Every count torch may pick by itself on this machine: the physical
    cores, the logical CPUs, and the CPUs this process may run on (torch
    counts those under a CPU affinity mask: taskset, containers, Slurm)."""
    counts = {torch_default_threads(), os.cpu_count() or 1}
    if hasattr(os, "sched_getaffinity"):
        counts.add(len(os.sched_getaffinity(0)))
    return frozenset(counts)


def user_chose_threads(current: int) -> bool:
    """Whether the process chose torch's thread count itself: an environment
    variable, or torch.set_num_threads with a count torch would not pick.

    current (int): the thread's count, as torch.get_num_threads() gives it.
    """
    if any(os.environ.get(name, "").strip() for name in THREAD_ENV_VARS):
        return True
    return current not in possible_defaults()


def resolve_threads(setting: int, current: Optional[int] = None) -> Optional[int]:
    """The thread count for the component's torch work.

    setting (int): the component's `threads` setting; 0 is "auto".
    current (Optional[int]): the calling thread's count before the call;
        default torch.get_num_threads().
    RETURNS (Optional[int]): the count to run with, or None to keep torch's
        current count (the process chose it).
    """
    if setting < 0 or setting > MAX_THREADS:
        raise ValueError(
            f"threads must be 0 (auto) or a count from 1 to {MAX_THREADS}, got {setting} (for more, "
            "set OMP_NUM_THREADS or call torch.set_num_threads, and threads = 0)"
        )
    if setting > 0:
        return setting
    current = _get_num_threads() if current is None else current
    return None if user_chose_threads(current) else 1


class _Scopes(threading.local):
    """Per thread: whether the thread has run a call before."""

    seen = False


_scopes = _Scopes()
_lock = threading.Lock()
_running = 0  # calls inside torch_threads, over all threads
_process_count: Optional[int] = None  # the count before the first of them
_blas_scope: Optional[contextlib.ExitStack] = None


@contextlib.contextmanager
def torch_threads(setting: int) -> Iterator[int]:
    """Run the block with the thread count that `setting` resolves to, and
    restore the calling thread's count afterwards (see the module for
    several threads).

    setting (int): > 0 exactly that many threads; 0 auto (see the module).
    YIELDS (int): the calling thread's thread count inside the block.
    """
    global _running, _process_count, _blas_scope
    with _lock:
        before = _get_num_threads()
        if _running == 0:
            _process_count = before
        elif not _scopes.seen:  # its count may be the one another call set
            assert _process_count is not None  # set by the first of the running calls
            before = _process_count
        _scopes.seen = True
        wanted = resolve_threads(setting, before)
        if _running == 0 and wanted is not None:
            _blas_scope = contextlib.ExitStack()
            _blas_scope.enter_context(_blas_threads(wanted))
        _running += 1
    try:
        if wanted is not None and wanted != _get_num_threads():
            _set_num_threads(wanted)
        yield _get_num_threads()
    finally:
        if _get_num_threads() != before:
            _set_num_threads(before)
        with _lock:
            _running -= 1
            if _running == 0 and _blas_scope is not None:
                _blas_scope.close()
                _blas_scope = None


@lru_cache(maxsize=1)
def _blas_controller():
    """threadpoolctl's controller of the BLAS libraries loaded (numpy's), or
    None where threadpoolctl is not installed."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


@contextlib.contextmanager
def _blas_threads(n: int) -> Iterator[None]:
    """numpy's BLAS (the Thinc layers' matrix products) on n threads for the
    block, where threadpoolctl can set it."""
    controller = _blas_controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=n, user_api="blas"):
        yield


F = TypeVar("F", bound=Callable[..., Any])


def in_torch_threads(method: F) -> F:
    """Run a component's method inside `torch_threads(self.threads)`."""

    @functools.wraps(method)
    def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
        with torch_threads(checked_threads(self)):
            return method(self, *args, **kwargs)

    return cast(F, wrapped)


def checked_threads(component: Any) -> int:
    """A component's `threads` (set on it after it was built, too), or E039
    unless it is 0 or a count up to MAX_THREADS."""
    threads = component.threads
    if isinstance(threads, bool) or not isinstance(threads, int) or not 0 <= threads <= MAX_THREADS:
        raise ValueError(
            Errors.E039.format(name=component.name, setting="threads", value=threads, allowed=THREADS_ALLOWED)
        )
    return threads
