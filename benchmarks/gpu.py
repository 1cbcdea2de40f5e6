"""The CRF on a GPU: the fused Triton kernels vs the torch path vs pytorch-crf, and the pipeline.

    python benchmarks/gpu.py --output metrics/gpu.json [--repeats 50] \\
        [--model training/cpu/model-best --baseline training/baseline/model-best \\
         --corpus corpus/en_ewt-ud-dev.spacy] \\
        [--config configs/cpu.cfg --baseline-config configs/baseline.cfg \\
         --train-corpus corpus/en_ewt-ud-train.spacy --train-steps 300]

For each shape (B, T, K) of benchmarks/crf_kernels.py it times, on one CUDA
device, medians of synchronised runs (CUDA events): Viterbi decode and NLL
forward+backward by the kernels (SPACY_CRF_KERNELS=auto), by the torch code
(SPACY_CRF_KERNELS=torch) and by pytorch-crf, and as a yardstick a forward of
spacy_crf.nn.BiLSTMCRF (hidden 256 each way, input 128) over the same batch.
It first checks that the kernels give the torch path's Viterbi paths and NLL.
With --model/--baseline/--corpus it adds nlp.pipe words/s of a trained
crf_tagger and of spaCy's tagger (spacy.require_gpu); with --config and
--baseline-config, `spacy train` steps/s of both (the time of --train-steps
steps minus that of 20, which leaves start-up out). Device name and versions
are printed and written. Needs CUDA and the `benchmark` extra (pytorch-crf).

    python benchmarks/gpu.py --interpret

runs without a GPU: a smoke test of the kernels on CPU through Triton's
interpreter, at tiny shapes, against the torch path (its times mean nothing).
"""
import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

import torch

from spacy_crf.nn import BiLSTMCRF, CRFScores, allowed_from_tags, negative_log_likelihood, viterbi_decode

sys.path.insert(0, str(Path(__file__).parent))
import crf_kernels  # noqa: E402

SHAPES = [(256, 40, 18), (256, 40, 50), (1024, 60, 50), (16, 512, 20)]
TINY_SHAPES = [(4, 6, 3), (3, 5, 18), (2, 4, 50)]


@contextlib.contextmanager
def crf_code(mode: str) -> Iterator[None]:
    """Run crf.py's functions with SPACY_CRF_KERNELS=mode."""
    previous = os.environ.get("SPACY_CRF_KERNELS")
    os.environ["SPACY_CRF_KERNELS"] = mode
    try:
        yield
    finally:
        if previous is None:
            del os.environ["SPACY_CRF_KERNELS"]
        else:
            os.environ["SPACY_CRF_KERNELS"] = previous


def make_batch(B: int, T: int, K: int, device: str, seed: int = 0):
    """crf_kernels.py's random batch on `device`, with its lengths."""
    scores, tags = crf_kernels.make_batch(B, T, K, seed)
    return CRFScores(*(x.to(device) for x in scores)), tags.to(device), scores.mask.sum(1)


def median_ms(fn: Callable[[], object], repeats: int, device: str) -> float:
    """Median time of fn over repeats, after two warm-up calls; on CUDA
    between events recorded around each call, synchronised before reading."""
    fn()
    fn()
    times = []
    for _ in range(repeats):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            fn()
            times.append((time.perf_counter() - begin) * 1000)
    return statistics.median(times)


def torchcrf_for(scores: CRFScores):
    from torchcrf import CRF

    K = scores.emissions.shape[2]
    crf = CRF(K, batch_first=True).to(scores.emissions.device)
    with torch.no_grad():
        crf.transitions.copy_(scores.transitions)
        crf.start_transitions.copy_(scores.start)
        crf.end_transitions.copy_(scores.end)
    return crf


def nll_fwd_bwd(scores: CRFScores, allowed: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        emissions = scores.emissions.detach().requires_grad_(True)
        transitions = scores.transitions.detach().requires_grad_(True)
        loss = negative_log_likelihood(CRFScores(emissions, scores.mask, transitions, scores.start, scores.end), allowed)
        loss.sum().backward()

    return run


def bench_shape(B: int, T: int, K: int, *, repeats: int, device: str, with_reference: bool = True) -> Dict[str, object]:
    scores, tags, lengths = make_batch(B, T, K, device)
    allowed = allowed_from_tags(tags, K)
    with crf_code("torch"):
        torch_paths, _ = viterbi_decode(scores)
        torch_nll = negative_log_likelihood(scores, allowed)
    with crf_code("auto" if device == "cuda" else "triton"):
        from spacy_crf.nn.dispatch import use_kernels

        row: Dict[str, object] = {"shape": [B, T, K], "kernels_used": use_kernels(scores.emissions)}
        kernel_paths, _ = viterbi_decode(scores)
        kernel_nll = negative_log_likelihood(scores, allowed)
        row["same_paths"] = bool(torch.equal(kernel_paths, torch_paths))
        row["same_nll"] = bool(torch.allclose(kernel_nll, torch_nll, rtol=1e-5, atol=1e-4))
        with torch.no_grad():
            row["viterbi_kernel_ms"] = median_ms(lambda: viterbi_decode(scores), repeats, device)
        row["nll_kernel_ms"] = median_ms(nll_fwd_bwd(scores, allowed), repeats, device)
    if not with_reference:
        return row
    with crf_code("torch"):
        with torch.no_grad():
            row["viterbi_torch_ms"] = median_ms(lambda: viterbi_decode(scores), repeats, device)
        row["nll_torch_ms"] = median_ms(nll_fwd_bwd(scores, allowed), repeats, device)
    crf = torchcrf_for(scores)
    with torch.no_grad():
        row["viterbi_torchcrf_ms"] = median_ms(lambda: crf.decode(scores.emissions, mask=scores.mask), repeats, device)

    def torchcrf_nll() -> None:
        emissions = scores.emissions.detach().requires_grad_(True)
        crf.zero_grad()
        (-crf(emissions, tags, mask=scores.mask, reduction="sum")).backward()

    row["nll_torchcrf_ms"] = median_ms(torchcrf_nll, repeats, device)
    network = BiLSTMCRF(128, K, hidden_width=256).to(device).eval()
    inputs = torch.randn(B, T, 128, device=device)
    with torch.no_grad():
        row["bilstm_forward_ms"] = median_ms(lambda: network(inputs, lengths), max(5, repeats // 3), device)
    row["viterbi_vs_torchcrf"] = row["viterbi_torchcrf_ms"] / row["viterbi_kernel_ms"]
    row["viterbi_vs_torch"] = row["viterbi_torch_ms"] / row["viterbi_kernel_ms"]
    row["nll_vs_torchcrf"] = row["nll_torchcrf_ms"] / row["nll_kernel_ms"]
    row["nll_vs_torch"] = row["nll_torch_ms"] / row["nll_kernel_ms"]
    row["viterbi_share_of_bilstm"] = row["viterbi_kernel_ms"] / row["bilstm_forward_ms"]
    return row


def pipe_speed(model: str, corpus: str, *, repeats: int, batch_size: int) -> Dict[str, object]:
    """nlp.pipe words/s on the GPU (benchmarks/pipeline_speed.py's measure)."""
    import spacy
    from pipeline_speed import unannotated_docs, words_per_second

    nlp = spacy.load(model)
    docs = unannotated_docs(nlp, corpus)
    median, rates, n_words = words_per_second(nlp, docs, repeats=repeats, batch_size=batch_size)
    return {"model": model, "words_per_second": round(median), "runs": [round(r) for r in rates], "n_words": n_words}


def train_speed(config: str, train: str, dev: str, *, steps: int, gpu_id: int) -> Dict[str, object]:
    """`spacy train` steps/s on the GPU: (steps - 20) / (time(steps) - time(20)),
    so that loading, initialisation and saving cancel out."""
    times = {}
    for n in (20, steps):
        with tempfile.TemporaryDirectory() as output:
            command = [
                sys.executable, "-m", "spacy", "train", config, "--output", output, "--gpu-id", str(gpu_id),
                "--paths.train", train, "--paths.dev", dev, "--training.max_epochs", "0",
                "--training.max_steps", str(n), "--training.eval_frequency", str(n + 1),
            ]
            begin = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
            times[n] = time.perf_counter() - begin
    return {"config": config, "steps": steps, "steps_per_second": (steps - 20) / (times[steps] - times[20]), "seconds": times}


def versions() -> Dict[str, Optional[str]]:
    found: Dict[str, Optional[str]] = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda}
    for package in ("triton", "pytorch-crf", "spacy", "thinc", "cupy-cuda12x", "cupy-cuda13x", "cupy"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


def print_table(rows: List[Dict[str, object]]) -> None:
    print(
        "| (B, T, K) | same paths / NLL | Viterbi kernel | torch path | pytorch-crf | vs pytorch-crf "
        "| NLL fwd+bwd kernel | torch path | pytorch-crf | vs pytorch-crf | BiLSTM fwd | Viterbi / BiLSTM |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {tuple(r['shape'])} | {r['same_paths']} / {r['same_nll']} | {r['viterbi_kernel_ms']:.3f} ms "
            f"| {r['viterbi_torch_ms']:.2f} ms | {r['viterbi_torchcrf_ms']:.1f} ms | {r['viterbi_vs_torchcrf']:.0f}x "
            f"| {r['nll_kernel_ms']:.3f} ms | {r['nll_torch_ms']:.2f} ms | {r['nll_torchcrf_ms']:.1f} ms "
            f"| {r['nll_vs_torchcrf']:.0f}x | {r['bilstm_forward_ms']:.2f} ms | {100 * r['viterbi_share_of_bilstm']:.1f}% |"
        )


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--gpu-id", type=int, default=0)
    parser.add_argument("--interpret", action="store_true", help="no GPU: smoke-test the kernels under Triton's interpreter")
    parser.add_argument("--model", help="a trained crf_tagger pipeline (nlp.pipe words/s)")
    parser.add_argument("--baseline", help="a trained spaCy tagger pipeline (nlp.pipe words/s)")
    parser.add_argument("--corpus", help="the .spacy corpus for nlp.pipe, and the dev set for spacy train")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--pipe-repeats", type=int, default=5)
    parser.add_argument("--config", help="crf_tagger training config (spacy train steps/s)")
    parser.add_argument("--baseline-config", help="spaCy tagger training config (spacy train steps/s)")
    parser.add_argument("--train-corpus", help="the .spacy training corpus for spacy train")
    parser.add_argument("--train-steps", type=int, default=300)
    args = parser.parse_args(argv)
    if bool(args.model) != bool(args.baseline) or (args.model and not args.corpus):
        parser.error("--model and --baseline go together, with --corpus")
    if (args.config or args.baseline_config) and not (args.config and args.baseline_config and args.train_corpus and args.corpus):
        parser.error("--config and --baseline-config go together, with --train-corpus and --corpus")
    if args.train_steps <= 20:
        parser.error("--train-steps must be more than 20")
    return args


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(1)
    if args.interpret:
        # before the kernel module is first imported: Triton reads it then
        os.environ["TRITON_INTERPRET"] = "1"
        rows = [bench_shape(B, T, K, repeats=3, device="cpu", with_reference=False) for B, T, K in TINY_SHAPES]
        for r in rows:
            print(json.dumps(r))
        if not all(r["kernels_used"] and r["same_paths"] and r["same_nll"] for r in rows):
            sys.exit("the kernels disagree with the torch path (or did not run)")
        print("kernels under the interpreter: same paths and NLL as the torch path (times mean nothing)")
        return
    if not torch.cuda.is_available():
        sys.exit(
            "benchmarks/gpu.py needs CUDA, and torch.cuda.is_available() is False here; "
            "`python benchmarks/gpu.py --interpret` smoke-tests the kernels on CPU"
        )
    torch.cuda.set_device(args.gpu_id)
    result: Dict[str, object] = {
        "device": torch.cuda.get_device_name(),
        "versions": versions(),
        "repeats": args.repeats,
        "rows": [bench_shape(B, T, K, repeats=args.repeats, device="cuda") for B, T, K in SHAPES],
    }
    print(f"{result['device']}; " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()))
    print(f"medians of {args.repeats} synchronised runs (CUDA events)")
    print_table(result["rows"])
    if args.model:
        import spacy

        spacy.require_gpu(args.gpu_id)
        pipe = {
            name: pipe_speed(path, args.corpus, repeats=args.pipe_repeats, batch_size=args.batch_size)
            for name, path in (("crf_tagger", args.model), ("tagger", args.baseline))
        }
        pipe["ratio"] = pipe["crf_tagger"]["words_per_second"] / pipe["tagger"]["words_per_second"]
        result["nlp_pipe"] = pipe
        print(
            f"nlp.pipe words/s (batch {args.batch_size}): crf_tagger {pipe['crf_tagger']['words_per_second']:,}, "
            f"spaCy tagger {pipe['tagger']['words_per_second']:,}, ratio {pipe['ratio']:.2f}x"
        )
    if args.config:
        train = {
            name: train_speed(config, args.train_corpus, args.corpus, steps=args.train_steps, gpu_id=args.gpu_id)
            for name, config in (("crf_tagger", args.config), ("tagger", args.baseline_config))
        }
        result["spacy_train"] = train
        print(
            f"spacy train steps/s: crf_tagger {train['crf_tagger']['steps_per_second']:.2f}, "
            f"spaCy tagger {train['tagger']['steps_per_second']:.2f}"
        )
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
