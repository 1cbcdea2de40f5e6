"""Time per chunk of reading Parquet input, by row-group size: the corpus job
reads a file chunk by chunk (`spacy_crf.corpus.inputs.read_chunk`, in file
order, as the local engine does), and the time and memory a chunk takes must
not grow with the size of its row group.

    python -m benchmarks.parquet_chunks [--rows 1000000] [--groups 10000 1000000]
        [--batch-size 64] [--shard-size 10000] [--chunks N] [--folder DIR]

Writes one file of `--rows` short texts ("text number I", about 20 bytes)
per row-group size (pyarrow's writer, snappy), then, for each, in a fresh
process: plans it as the job does and reads its chunks in order (the first
`--chunks` of them; all by default), timing each. Prints one line of JSON
per file: the chunks read, the median, mean, 99th percentile and largest
time per chunk in microseconds, the total seconds, and the peak memory of
pyarrow's pool and of the process (ru_maxrss) in MB; then the ratio of the
largest row group's median and mean to the smallest's.
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List


def write_file(path: Path, *, rows: int, group: int) -> None:
    import pyarrow
    import pyarrow.parquet

    table = pyarrow.table({"id": list(range(rows)), "text": [f"text number {i}" for i in range(rows)]})
    pyarrow.parquet.write_table(table, path, row_group_size=group)


def measure(path: Path, *, batch_size: int, shard_size: int, chunks: int) -> Dict[str, Any]:
    """Read the chunks of one file in order and time each (in this process)."""
    import pyarrow

    from spacy_crf.corpus.inputs import plan_shards, read_chunk

    shards, by_shard = plan_shards(path, shard_size=shard_size, batch_size=batch_size)
    work = [chunk for shard in shards for chunk in by_shard[shard.name]]
    if chunks:
        work = work[:chunks]
    times: List[float] = []
    start_all = time.perf_counter()
    n_records = 0
    for chunk in work:
        start = time.perf_counter()
        data = read_chunk(chunk)
        times.append(time.perf_counter() - start)
        n_records += len(data.records)
    total = time.perf_counter() - start_all
    times_us = sorted(t * 1e6 for t in times)
    return {
        "file": path.name,
        "chunks": len(work),
        "records": n_records,
        "median_us": round(statistics.median(times_us), 1),
        "mean_us": round(statistics.fmean(times_us), 1),
        "p99_us": round(times_us[min(len(times_us) - 1, int(0.99 * len(times_us)))], 1),
        "max_us": round(times_us[-1], 1),
        "total_s": round(total, 3),
        "arrow_peak_mb": round(pyarrow.default_memory_pool().max_memory() / 1e6, 1),
        "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3, 1),
    }


def main(argv: Any = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, nargs="+", default=[10_000, 1_000_000])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--shard-size", type=int, default=10_000)
    parser.add_argument("--chunks", type=int, default=0, help="read only the first N chunks of each file")
    parser.add_argument("--folder", default=None, help="where the files go (default: a temporary folder)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # measure this file, in this process
    args = parser.parse_args(argv)
    if args.one:
        result = measure(Path(args.one), batch_size=args.batch_size, shard_size=args.shard_size, chunks=args.chunks)
        print(json.dumps(result))
        return
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(args.folder or temporary)
        folder.mkdir(parents=True, exist_ok=True)
        results = []
        for group in args.groups:
            path = folder / f"rows{args.rows}_group{group}.parquet"
            if not path.exists():
                write_file(path, rows=args.rows, group=group)
            command = [sys.executable, "-m", "benchmarks.parquet_chunks", "--one", str(path)]
            command += ["--batch-size", str(args.batch_size), "--shard-size", str(args.shard_size)]
            command += ["--chunks", str(args.chunks)]
            line = subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
            results.append(json.loads(line))
            print(line, flush=True)
        small, large = results[0], results[-1]
        print(
            json.dumps(
                {
                    "median_ratio": round(large["median_us"] / small["median_us"], 3),
                    "mean_ratio": round(large["mean_us"] / small["mean_us"], 3),
                }
            )
        )


if __name__ == "__main__":
    main()
