"""Single-bit flips in a saved spacy-crf component's model file, and how many loading refuses.

    python -m benchmarks.bit_flips training/cpu/model-best --flips 2000 [--work /tmp/bit_flips]

The pipeline is saved again by this version (so that its cfg holds the
checksum) into --work; then, one at a time, a bit of the component's model
file is flipped (--flips bits at random, and every bit of the last 64 bytes,
where the network's sizes sit) and the component loads the file. Prints the
count of flips and of refused loads, by error code.
"""

import argparse
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Dict, Optional

import spacy

from .common import crf_component_name


def flip_and_load(pipeline: Path, work: Path, flips: int, seed: int = 0) -> Dict:
    """RETURNS (Dict): "bytes" of the model file, "flips" tried, "refused" loads and their "codes"."""
    shutil.rmtree(work, ignore_errors=True)
    spacy.load(pipeline).to_disk(work)
    nlp = spacy.load(work)
    name = crf_component_name(nlp)
    component, model_file = nlp.get_pipe(name), work / name / "model"
    data = model_file.read_bytes()
    rng = random.Random(seed)
    bits = [rng.randrange(len(data) * 8) for _ in range(flips)] + list(range(max(0, len(data) - 64) * 8, len(data) * 8))
    codes: Counter = Counter()
    for bit in bits:
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        model_file.write_bytes(bytes(flipped))
        try:
            component.from_disk(work / name, exclude=["vocab"])
        except ValueError as e:
            codes[str(e)[1:5]] += 1
    model_file.write_bytes(data)
    return {"bytes": len(data), "flips": len(bits), "refused": sum(codes.values()), "codes": dict(codes)}


def main(argv: Optional[list] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pipeline", type=Path)
    parser.add_argument("--flips", type=int, default=2000)
    parser.add_argument("--work", type=Path, default=Path("metrics/bit_flips"))
    args = parser.parse_args(argv)
    result = flip_and_load(args.pipeline, args.work, args.flips)
    print(
        f"model file {result['bytes']:,} bytes: {result['refused']:,} of {result['flips']:,} single-bit flips "
        f"refused at load {result['codes']}"
    )


if __name__ == "__main__":
    main()
