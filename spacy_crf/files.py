"""Files the package writes and checks: atomic writes (a kill leaves the old
file or the new one, never a part) and the checksum a component saves beside
its weights. No spaCy, no torch."""
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Union


def write_atomic(path: Union[str, Path], data: Union[bytes, str]) -> None:
    """Write the file through a temporary file in its folder, flushed to disk
    and renamed over it.

    path (Union[str, Path]): the file.
    data (Union[bytes, str]): its content (str is written as UTF-8).
    """
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf8")
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def checksum(cfg: Dict[str, Any], model_bytes: bytes) -> str:
    """The sha256 of a component's cfg (as canonical JSON) and weights.

    cfg (Dict[str, Any]): the cfg as it is saved, without its checksum.
    model_bytes (bytes): the model's bytes as they are saved.
    RETURNS (str): "sha256:" and the hex digest.
    """
    digest = hashlib.sha256(json.dumps(cfg, sort_keys=True, ensure_ascii=True).encode("ascii"))
    digest.update(model_bytes)
    return f"sha256:{digest.hexdigest()}"
