"""Kill a corpus tagging job at random moments, rerun it, and check that every
input record ended up exactly once: tagged in the output shards, or reported
with its id in bad_records/.

    python -c "from pathlib import Path; from tests.corpus_data import train_tagger; train_tagger(Path('/tmp/tagger'))"
    python -m benchmarks.corpus_faults /tmp/tagger --records 10000 --cycles 5 --engine local --workers 2
    python -m benchmarks.corpus_faults /tmp/tagger --records 10000 --cycles 5 --engine ray --workers 2

The corpus is five JSON Lines files, two of them with paths that flatten
alike (`sub/part.jsonl` and `sub__part.jsonl`), one with a long and deep name
(its shard files' names are hashed to fit), one whose name is not UTF-8 (its
good records have no id, so they get `FILE:LINE`), a plain text file and a
corrupt Parquet file (one bad record), with `--bad-share` of the records bad
in each way of BAD_KINDS (a plain text line can only be over max_length or not
UTF-8; the jobs run with --max-line-bytes MAX_LINE_BYTES). A first run, to the end into a folder of its
own, times the job: its start-up (until its first shard is done) and the
time a shard takes. Each cycle then starts `python -m spacy_crf tag` in a
process group of its own and sends the group SIGKILL at a random moment of
its work: once a random number of the shards left are done (none: during
the start-up), after a random part of the time a shard takes; then it counts
the processes of the job still running 30 seconds later. Then, with
`--changes`, a second job from scratch into a folder of its own: one run
whose last input file grows by a line once its first shard is done, one
where it shrinks to half, one where it is rewritten with content of the same
size and its mtime put back (as `cp -p`, `rsync -a`): each must stop with E122; the file's bytes are put
back after each; a last run goes to the end and that folder is checked as
the first. A last run of the killed job goes to the end; then every shard file and bad-record file in the output folder,
listed in the manifest or not, is read back and compared with the corpus.
Prints one line of JSON per cycle, then the figures.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

ROOT = Path(__file__).parent.parent
BAD_KINDS = (
    "surrogate",
    "over_max_length",
    "missing_text",
    "non_utf8",
    "wrong_type",
    "malformed_json",
    "deep_json",
    "over_max_line_bytes",
)
TEXT_KINDS = ("good", "over_max_length", "non_utf8")  # what a plain text line can be
# the jobs' --max-line-bytes: over the lines of OVER_MAX_LENGTH, under those of OVER_MAX_LINE_BYTES
MAX_LINE_BYTES = 1_200_000
OVER_MAX_LINE_BYTES = "ham " * 325_000  # 1,300,000 characters
# the input files of JSON Lines: two flatten alike, one is long and deep (its
# shard file's name is hashed to fit), one is not UTF-8 (its records have no
# ids: FILE:LINE, with the name's bytes as \xe9)
NON_UTF8_NAME = os.fsdecode(b"caf\xe9.jsonl")
JSONL_FILES = ["part-0.jsonl", "sub/part.jsonl", "sub__part.jsonl", "sub/deeper/" + "l" * 230 + ".jsonl", NON_UTF8_NAME]
CORRUPT_FILE = "part-4.parquet"  # one bad record, FILE:1
WORDS = ["I", "like", "green", "eggs", "and", "ham", "Eat", "blue", "Anna", "lives", "in", "Berlin"]
OVER_MAX_LENGTH = "eggs " * 200_001  # 1,000,005 characters, over spaCy's default max_length
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}  # the jobs' environment


def make_corpus(folder: Path, *, records: int, bad_share: float, seed: int) -> Dict[str, Any]:
    """Write the corpus and say what each record must become.

    folder (Path): the input folder to create.
    records (int): records in all.
    bad_share (float): share of the records bad in each way of BAD_KINDS.
    seed (int): the random seed.
    RETURNS (Dict[str, Any]): "good": the ids to tag; "bad": the bad records'
        ids by (file, 1-based line); "kinds": records of each kind.
    """
    rng = random.Random(seed)
    kinds = ["good"] * records
    spots = rng.sample(range(records), round(records * bad_share) * len(BAD_KINDS))
    for k, position in enumerate(spots):
        kinds[position] = BAD_KINDS[k % len(BAD_KINDS)]
    jsonl_files = JSONL_FILES
    files: Dict[str, List[bytes]] = {name: [] for name in jsonl_files}
    files["part-3.txt"] = []
    good: Set[str] = set()
    bad: Dict[Tuple[str, int], str] = {}
    for i, kind in enumerate(kinds):
        record_id = f"r{i}"
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 120)))
        name = (
            "part-3.txt" if kind in TEXT_KINDS and rng.random() < 0.25 else jsonl_files[rng.randrange(len(jsonl_files))]
        )
        lines = files[name]
        where = (name, len(lines) + 1)
        if name.endswith(".txt"):
            line = {"good": text, "over_max_length": OVER_MAX_LENGTH, "non_utf8": text + " caf\xe9"}[kind]
            lines.append(line.encode("latin-1" if kind == "non_utf8" else "utf8"))
            record_id = f"{name}:{where[1]}"
        elif kind in ("malformed_json", "deep_json", "over_max_line_bytes"):
            line = {
                "malformed_json": json.dumps({"id": record_id, "text": text})[:-2],
                "deep_json": json.dumps({"id": record_id, "text": text})[:-1] + ', "f": ' + "[" * 100_000 + "}",
                "over_max_line_bytes": json.dumps({"id": record_id, "text": OVER_MAX_LINE_BYTES}),
            }[kind]
            lines.append(line.encode("utf8"))
            record_id = f"{_readable(name)}:{where[1]}"  # its id cannot be read either
        elif kind == "non_utf8":
            lines.append(json.dumps({"id": record_id, "text": text + " caf\xe9"}, ensure_ascii=False).encode("latin-1"))
        else:
            value: Any = {
                "good": text,
                "surrogate": text + " \ud800",
                "over_max_length": OVER_MAX_LENGTH,
                "wrong_type": [7, [text], None][i % 3],
            }.get(kind)
            row = {"id": record_id, "body": text} if kind == "missing_text" else {"id": record_id, "text": value}
            if name == NON_UTF8_NAME and kind == "good":
                del row["id"]
                record_id = f"{_readable(name)}:{where[1]}"
            lines.append(json.dumps(row).encode("ascii"))
        if kind == "good":
            good.add(record_id)
        else:
            bad[(_readable(name), where[1])] = record_id
    folder.mkdir(parents=True)
    for name, lines in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"".join(line + b"\n" for line in lines))
    (folder / CORRUPT_FILE).write_bytes(b"PAR1" + bytes(rng.randrange(256) for _ in range(1000)))
    bad[(CORRUPT_FILE, 1)] = f"{CORRUPT_FILE}:1"
    return {"good": good, "bad": bad, "kinds": {**Counter(kinds), "corrupt_file": 1}}


def _readable(name: str) -> str:
    """A file name as the job's ids and reports write it."""
    return os.fsencode(name).decode("utf8", "backslashreplace")


def descendants(pid: int) -> List[int]:
    """The pids of a process's descendants, from /proc (Linux)."""
    parents: Dict[int, List[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found.extend(children)
        todo.extend(children)
    return found


def alive(pids: List[int]) -> List[int]:
    """The processes of `pids` that still run (zombies count as ended)."""
    running = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            running.append(pid)
    return running


def tag_command(
    model: Path, input: Path, output: Path, *, engine: str, workers: int, shard_size: int, batch_size: int
) -> List[str]:
    """The command line of a job that tags `input` into `output` as JSON Lines."""
    return [
        sys.executable,
        "-m",
        "spacy_crf",
        "tag",
        str(model),
        str(input),
        str(output),
        "--engine",
        engine,
        "--workers",
        str(workers),
        "--output-format",
        "jsonl",
        "--shard-size",
        str(shard_size),
        "--batch-size",
        str(batch_size),
        "--max-line-bytes",
        str(MAX_LINE_BYTES),
        "--no-progress",
    ]


def run_killed(
    command: List[str], log: Path, *, output: Path, after: Optional[int], delay: float, grace: float = 30.0
) -> Dict[str, Any]:
    """Run a command in a process group of its own; once `after` shards of
    the output folder are done, wait `delay` seconds more and SIGKILL the
    group (unless the job ended first).

    after (Optional[int]): shards done before the kill; None runs the job to
        the end.
    RETURNS (Dict[str, Any]): "killed" (False where the job had ended),
        "returncode", "processes": the job's processes when it was killed,
        and "left": those still running `grace` seconds after the kill (then
        killed, so that they do not pile up).
    """
    with log.open("ab") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=log_file, env=ENV, start_new_session=True)
        while after is not None and process.poll() is None and _shards_done(output) < after:
            time.sleep(0.02)
        try:
            process.wait(timeout=None if after is None else delay)
            return {"killed": False, "returncode": process.returncode, "processes": 1, "left": 0}
        except subprocess.TimeoutExpired:
            pass
        family = descendants(process.pid)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + grace
        while alive(family) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = alive(family)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        return {"killed": True, "returncode": process.returncode, "processes": 1 + len(family), "left": len(left)}


def check_output(output: Path, expected: Dict[str, Any]) -> Dict[str, int]:
    """Read back every shard and bad-record file of the output folder and count
    the records that are not where they should be, once.

    RETURNS (Dict[str, int]): the counts; all but the "_expected" and "_once"
        ones are 0 for a job that lost and doubled nothing.
    """
    tagged = Counter(
        json.loads(line)["id"]
        for path in output.glob("*.jsonl")
        if path.name != "manifest.jsonl"
        for line in path.read_text(encoding="utf8").splitlines()
    )
    reported = Counter()
    ids: Dict[Tuple[str, int], Set[Any]] = {}
    for path in (output / "bad_records").glob("*.jsonl"):
        for line in path.read_text(encoding="ascii").splitlines():
            entry = json.loads(line)
            where = (entry["source"], entry["position"])
            reported[where] += 1
            ids.setdefault(where, set()).add(entry["id"])
    good, bad = expected["good"], expected["bad"]
    return {
        "good_expected": len(good),
        "good_tagged_once": sum(tagged[i] == 1 for i in good),
        "good_missing": sum(tagged[i] == 0 for i in good),
        "good_tagged_twice_or_more": sum(tagged[i] > 1 for i in good),
        "bad_expected": len(bad),
        "bad_reported_once": sum(reported[w] == 1 for w in bad),
        "bad_missing": sum(reported[w] == 0 for w in bad),
        "bad_reported_twice_or_more": sum(reported[w] > 1 for w in bad),
        "bad_with_a_wrong_id": sum(reported[w] > 0 and ids[w] != {i} for w, i in bad.items()),
        "bad_in_the_output": sum(tagged[i] > 0 for i in bad.values()),
        "output_ids_not_in_the_input": sum(n for i, n in tagged.items() if i not in good and i not in bad.values()),
        "reports_not_of_a_bad_record": sum(n for w, n in reported.items() if w not in bad),
        "left_temporary_files": len(list(output.rglob(".tmp-*"))),
    }


def run_with_change(command: List[str], log: Path, *, output: Path, path: Path, how: str) -> Dict[str, Any]:
    """Run a job and change an input file once its next shard is done:
    "grow" appends a line, "shrink" cuts it to half its lines, "replace"
    rewrites it with content of the same size and puts its mtime back (as
    `cp -p` and `rsync -a` do); then put its bytes back once the job has ended.

    RETURNS (Dict[str, Any]): "change", "returncode", "stopped_with_E122".
    """
    original = path.read_bytes()
    before = _shards_done(output)
    start = log.stat().st_size if log.exists() else 0
    with log.open("ab") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=log_file, env=ENV, start_new_session=True)
        while process.poll() is None and _shards_done(output) <= before:
            time.sleep(0.02)
        if how == "grow":
            path.write_bytes(original + json.dumps({"id": "late", "text": "eggs"}).encode("ascii") + b"\n")
        elif how == "replace":  # as cp -p or rsync -a: the same size, the mtime put back
            status = path.stat()
            path.write_bytes(original.replace(b"like", b"LIKE"))
            os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
        else:
            lines = original.split(b"\n")
            path.write_bytes(b"\n".join(lines[: len(lines) // 2]) + b"\n")
        process.wait()
    path.write_bytes(original)
    said = log.read_bytes()[start:].decode("utf8", "replace")
    return {"change": how, "returncode": process.returncode, "stopped_with_E122": "E122" in said}


def run(
    model: Path,
    workdir: Path,
    *,
    records: int,
    bad_share: float,
    cycles: int,
    engine: str,
    workers: int,
    shard_size: int,
    batch_size: int,
    seed: int,
    changes: bool = False,
) -> Dict[str, Any]:
    """Make the corpus, time the job, kill and rerun it `cycles` times, run it
    to the end, check the output.

    RETURNS (Dict[str, Any]): the settings, the first run's times, "cycles"
        (one dict per kill), "final_returncode" and the counts of check_output.
    """
    rng = random.Random(seed)
    expected = make_corpus(workdir / "input", records=records, bad_share=bad_share, seed=seed)
    log = workdir / "tag.log"

    def command(output: str) -> List[str]:
        return tag_command(
            model,
            workdir / "input",
            workdir / output,
            engine=engine,
            workers=workers,
            shard_size=shard_size,
            batch_size=batch_size,
        )

    startup, length = time_job(command("first-run"), workdir / "first-run", log)
    n_shards = _shards_done(workdir / "first-run")
    shard_seconds = (length - startup) / n_shards
    output = workdir / "output"
    done: List[Dict[str, Any]] = []
    for cycle in range(cycles):
        before = _shards_done(output)
        after = rng.randint(before, max(before, n_shards - 1))
        delay = rng.uniform(0.0, shard_seconds if after > before else startup + shard_seconds)
        result = run_killed(command("output"), log, output=output, after=after, delay=delay)
        result.update(
            cycle=cycle + 1,
            shards_done_before=before,
            kill_after_shards=after,
            kill_delay_s=round(delay, 2),
            shards_done_after=_shards_done(output),
        )
        print(json.dumps(result), file=sys.stderr, flush=True)
        done.append(result)
    changed: Dict[str, Any] = {}
    if changes:
        # a job from scratch, into a folder of its own; the file changed is the
        # one tagged last (its shards are still to come when the first is done)
        last = sorted(
            (p for p in (workdir / "input").rglob("*") if p.is_file()),
            key=lambda p: str(p.relative_to(workdir / "input")),
        )[-1]
        runs = []
        for how in ("grow", "shrink", "replace"):
            result = run_with_change(command("changed"), log, output=workdir / "changed", path=last, how=how)
            print(json.dumps(result), file=sys.stderr, flush=True)
            runs.append(result)
        end = run_killed(command("changed"), log, output=workdir / "changed", after=None, delay=0.0)
        changed = {
            "file": str(last.relative_to(workdir / "input")),
            "runs": runs,
            "final_returncode": end["returncode"],
            **check_output(workdir / "changed", expected),
        }
    final = run_killed(command("output"), log, output=output, after=None, delay=0.0)
    return {
        "records": records,
        "kinds": expected["kinds"],
        "engine": engine,
        "workers": workers,
        "shard_size": shard_size,
        "batch_size": batch_size,
        "shards": n_shards,
        "first_run_startup_s": round(startup, 1),
        "first_run_s": round(length, 1),
        "cycles": done,
        "changes": changed,
        "final_returncode": final["returncode"],
        **check_output(output, expected),
    }


def time_job(command: List[str], output: Path, log: Path) -> Tuple[float, float]:
    """Run a job to the end and time it.

    RETURNS (Tuple[float, float]): the seconds until its first shard was done,
        and until it ended.
    """
    start = time.monotonic()
    first = None
    with log.open("ab") as log_file:
        process = subprocess.Popen(command, stdout=log_file, stderr=log_file, env=ENV)
        while process.poll() is None:
            if first is None and (output / "manifest.jsonl").exists():
                first = time.monotonic() - start
            time.sleep(0.05)
    if process.returncode != 0:
        raise RuntimeError(f"the job failed (exit code {process.returncode}): see {log}")
    length = time.monotonic() - start
    return (length if first is None else first), length


def _shards_done(output: Path) -> int:
    manifest = output / "manifest.jsonl"
    return len(manifest.read_text(encoding="utf8").splitlines()) if manifest.exists() else 0


def main(argv: Optional[List[str]] = None) -> None:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", type=Path, help="a pipeline with a crf_tagger")
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--bad-share", type=float, default=0.01, help="share of the records bad in each way")
    parser.add_argument("--cycles", type=int, default=5, help="kill and rerun this many times")
    parser.add_argument("--engine", choices=["local", "ray"], default="local")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shard-size", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--changes", action="store_true", help="also change an input file's size during two runs")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="where the corpus and the outputs go, kept (default: a temporary folder)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        result = run(
            args.model,
            workdir,
            records=args.records,
            bad_share=args.bad_share,
            cycles=args.cycles,
            engine=args.engine,
            workers=args.workers,
            shard_size=args.shard_size,
            batch_size=args.batch_size,
            seed=args.seed,
            changes=args.changes,
        )
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
