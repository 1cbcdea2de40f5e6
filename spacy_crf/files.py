"""Files the package writes and checks: atomic writes (a kill leaves the old
file or the new one, never a part) and the checksum a component saves beside
its weights. No spaCy, no torch."""

import hashlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple, Union

# The name of every temporary file `write_atomic` makes starts with this (a
# killed writer can leave one: see `spacy_crf.corpus.outputs.remove_temporary_files`).
TEMPORARY_PREFIX = ".tmp-"
_BLOCK = 1 << 20


def write_atomic(path: Union[str, Path], data: Union[bytes, str, Callable[[Path], Any]]) -> None:
    """Write the file through a temporary file in its folder, flushed to disk
    and renamed over it.

    The file gets the mode a plain `open(path, "w")` gives it: an existing
    file keeps its mode, a new one gets 0o666 less the process's umask.

    path (Union[str, Path]): the file.
    data (Union[bytes, str, Callable[[Path], Any]]): its content (str is
        written as UTF-8), or a function that writes the file at the path it
        is given.
    """
    path = Path(path)
    fd, temporary = _create_temporary(path)
    try:
        with os.fdopen(fd, "wb") as file:
            if not callable(data):
                file.write(data.encode("utf8") if isinstance(data, str) else data)
        if callable(data):
            data(temporary)
        with open(temporary, "rb") as file:
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _create_temporary(path: Path) -> Tuple[int, Path]:
    """A new file beside `path` (opened for writing, O_EXCL) with the mode
    `path` has, or, where there is none, the umask's (the kernel applies it)."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    while True:
        temporary = path.parent / f"{TEMPORARY_PREFIX}{path.name}.{secrets.token_hex(4)}"
        try:
            fd = os.open(temporary, flags, 0o666)
        except FileExistsError:
            continue
        if mode is not None:
            os.chmod(fd if os.chmod in os.supports_fd else temporary, mode)
        return fd, temporary


class FileRefused(ValueError):
    """A file `read_regular_file` does not read: what it is, or its size
    where that is over the bound (`size`)."""

    def __init__(self, reason: str, size: Optional[int] = None) -> None:
        super().__init__(reason)
        self.size = size


def read_regular_file(path: Union[str, Path], max_bytes: int) -> bytes:
    """The bytes of a regular file of at most `max_bytes` bytes, checked
    before anything is read: a device (/dev/zero), a FIFO (which would wait
    for a writer), a folder or a file over the bound raises FileRefused. A
    link is followed to what it names, which is checked the same way.

    path (Union[str, Path]): the file.
    max_bytes (int): the most bytes it may have.
    RETURNS (bytes): its content.
    """
    fd = os.open(
        path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    )
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise FileRefused("it is not a regular file (a device, FIFO, socket or folder)")
        if status.st_size > max_bytes:
            raise FileRefused("too large", size=status.st_size)
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(max_bytes + 1)
        if len(data) > max_bytes:  # it grew while read
            raise FileRefused("too large", size=len(data))
        return data
    finally:
        os.close(fd)


def file_sha256(path: Union[str, Path]) -> str:
    """The sha256 of a file (hex), read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def checksum(cfg: Dict[str, Any], model_bytes: bytes) -> str:
    """The sha256 of a component's cfg (as canonical JSON) and weights.

    cfg (Dict[str, Any]): the cfg as it is saved, without its checksum.
    model_bytes (bytes): the model's bytes as they are saved.
    RETURNS (str): "sha256:" and the hex digest.
    """
    digest = hashlib.sha256(json.dumps(cfg, sort_keys=True, ensure_ascii=True).encode("ascii"))
    digest.update(model_bytes)
    return f"sha256:{digest.hexdigest()}"
