"""The CRF with many labels (morphological bundles: 500 to 2,000) on the CPU or
a GPU: time and peak memory of Viterbi, log Z with its gradient, marginals and n-best,
beside a BiLSTM forward over the same batch (the network the CRF sits on),
for a full K x K transition matrix and a class-factored one (17 classes, as
the UPOS tags of morphological bundles; spacy_crf.nn.factored).

    python -m benchmarks.large_labels [--labels 500 1000 2000] [--batch 32]
        [--length 40] [--repeats 5] [--threads 1] [--nbest-max-labels 1000]
        [--transitions full factored] [--classes 17]
        [--operations viterbi log_z_fwd_bwd marginals nbest_5 bilstm_forward]
        [--device cpu|cuda] [--kernels auto|torch|numba] [--output metrics/speed/large_labels.json]

Each operation runs in a fresh process (so that its peak memory is its own:
`peak_mb` is the process's peak resident memory, or on a GPU torch's peak
allocated device memory, less the peak before the operation), on random scores
of `--batch` sequences of 1 to `--length` tokens (the first one `--length`),
through spacy_crf.nn.kernels.dispatch as the pipeline calls it (`--kernels auto`): at
these label counts that is torch's code, except Viterbi, which Numba's fused
loops run on the CPU (spacy_crf.nn.kernels.numba_viterbi) and the fused kernel of
spacy_crf.nn.kernels.triton_factored runs for a factored matrix on a GPU;
`--kernels torch` times the torch code there too. On a GPU the times are
medians of CUDA-event timed runs.
"""

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import torch

from spacy_crf.nn import factored
from spacy_crf.nn.kernels import dispatch

from .common import make_batch, median_ms, write_json

OPERATIONS = ["viterbi", "log_z_fwd_bwd", "marginals", "nbest_5", "bilstm_forward"]


def peak_mb(device: str = "cpu") -> float:
    """The process's peak memory so far: resident on the CPU, allocated by torch on a GPU."""
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(
    operation: str,
    n_labels: int,
    batch: int,
    length: int,
    repeats: int,
    threads: int,
    transitions: str = "full",
    n_classes: int = 17,
    device: str = "cpu",
    kernels: str = "auto",
) -> Dict:
    """Time one operation and the memory it adds (run in its own process)."""
    torch.set_num_threads(threads)
    scores, _, _ = make_batch(batch, length, n_labels, device)
    parameters = [scores.transitions]
    if transitions == "factored":
        gen = torch.Generator().manual_seed(1)
        classes = (torch.arange(n_labels) % n_classes).to(device)  # every class used
        pair, leave, enter = (
            (torch.randn(*shape, generator=gen) * 0.1).to(device)
            for shape in [(n_classes, n_classes), (n_labels,), (n_labels,)]
        )
        parameters = [pair, leave, enter]
        scores = scores._replace(
            transitions=factored.factored_transitions(pair, leave, enter, classes), classes=classes
        )
    lstm = torch.nn.LSTM(128, 192, batch_first=True, bidirectional=True).to(device)
    inputs = torch.randn(batch, length, 128, device=device)

    def log_z_fwd_bwd():
        # the gradient reaches the parameters, as in training (for "factored",
        # through the dense matrix built from the factors)
        emissions = scores.emissions.detach().requires_grad_(True)
        leaves = [p.detach().requires_grad_(True) for p in parameters]
        matrix = leaves[0] if transitions == "full" else factored.factored_transitions(*leaves, scores.classes)
        dispatch.log_partition(
            scores._replace(emissions=emissions, transitions=matrix), kernels=kernels
        ).sum().backward()

    run = {
        "viterbi": lambda: dispatch.viterbi_decode(scores, kernels=kernels),
        "log_z_fwd_bwd": log_z_fwd_bwd,
        "marginals": lambda: dispatch.marginals(scores, kernels=kernels),
        "nbest_5": lambda: dispatch.nbest_decode(scores, 5),
        "bilstm_forward": lambda: lstm(inputs),
    }[operation]
    before = peak_mb(device)
    with torch.no_grad() if operation == "bilstm_forward" else torch.enable_grad():
        ms = median_ms(run, repeats, device)
    return {
        "operation": operation,
        "labels": n_labels,
        "transitions": transitions,
        "ms": round(ms, 2),
        "peak_mb": round(peak_mb(device) - before, 1),
        "device": device,
        "kernels": kernels,
    }


def table(rows: List[Dict]) -> str:
    """Markdown: one row per label count and transition matrix, ms and added
    peak MB per operation, and Viterbi's share of Viterbi + BiLSTM forward."""
    by_k: Dict[tuple, Dict[str, Dict]] = {}
    for row in rows:
        by_k.setdefault((row["labels"], row.get("transitions", "full")), {})[row["operation"]] = row
    lines = [
        "| labels | transitions | " + " | ".join(OPERATIONS) + " | Viterbi share |",
        "|---|---|" + "---|" * (len(OPERATIONS) + 1),
    ]
    for (k, kind), ops in sorted(by_k.items()):
        cells = [
            f"{ops[op]['ms']:,.1f} ms, {ops[op]['peak_mb']:.0f} MB" if op in ops else "not run" for op in OPERATIONS
        ]
        share = "-"
        if "viterbi" in ops and "bilstm_forward" in ops:
            viterbi, lstm = ops["viterbi"]["ms"], ops["bilstm_forward"]["ms"]
            share = f"{viterbi / (viterbi + lstm):.0%}"
        lines.append(f"| {k:,} | {kind} | " + " | ".join(cells) + f" | {share} |")
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--nbest-max-labels",
        type=int,
        default=None,
        help="run n-best only up to this many labels (its cost grows as K * K * k)",
    )
    parser.add_argument("--transitions", nargs="+", default=["full", "factored"], choices=["full", "factored"])
    parser.add_argument("--classes", type=int, default=17, help="classes of the factored matrix")
    parser.add_argument(
        "--operations",
        nargs="+",
        default=OPERATIONS,
        choices=OPERATIONS,
        help="the operations to time (the table's Viterbi share needs viterbi and bilstm_forward)",
    )
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="where the scores live")
    parser.add_argument(
        "--kernels",
        default="auto",
        choices=["auto", "torch", "numba"],
        help="spacy_crf.nn.kernels.dispatch's choice (auto; numba is the same), or torch's code wherever a kernel would run",
    )
    parser.add_argument("--output", type=Path)
    parser.add_argument("--one", nargs=3, metavar=("OPERATION", "LABELS", "TRANSITIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda needs a CUDA device")
    if args.one:  # the child process: one measurement, as JSON
        operation, n_labels, kind = args.one[0], int(args.one[1]), args.one[2]
        print(
            json.dumps(
                measure(
                    operation,
                    n_labels,
                    args.batch,
                    args.length,
                    args.repeats,
                    args.threads,
                    kind,
                    args.classes,
                    args.device,
                    args.kernels,
                )
            )
        )
        return
    rows = []
    for n_labels in args.labels:
        for kind in args.transitions:
            for operation in args.operations:
                if (
                    operation == "nbest_5"
                    and kind == "full"
                    and args.nbest_max_labels is not None
                    and n_labels > args.nbest_max_labels
                ):
                    continue
                command = [
                    sys.executable,
                    "-m",
                    "benchmarks.large_labels",
                    "--one",
                    operation,
                    str(n_labels),
                    kind,
                    "--batch",
                    str(args.batch),
                    "--length",
                    str(args.length),
                    "--classes",
                    str(args.classes),
                    "--repeats",
                    str(args.repeats),
                    "--threads",
                    str(args.threads),
                    "--device",
                    args.device,
                    "--kernels",
                    args.kernels,
                ]
                done = subprocess.run(command, check=True, capture_output=True, text=True)
                rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(
        f"{args.device}, kernels {args.kernels}: batch {args.batch}, length up to {args.length}, {args.threads} thread(s), "
        f"medians of {args.repeats}, factored: {args.classes} classes"
    )
    print(table(rows))
    write_json(
        {
            "device": args.device,
            "kernels": args.kernels,
            "batch": args.batch,
            "length": args.length,
            "threads": args.threads,
            "repeats": args.repeats,
            "classes": args.classes,
            "rows": rows,
        },
        args.output,
    )


if __name__ == "__main__":
    main()
