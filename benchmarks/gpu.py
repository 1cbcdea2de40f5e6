"""The CRF on a GPU: the fused Triton kernels vs the torch path vs pytorch-crf, and the pipeline.

    python -m benchmarks.gpu --output metrics/gpu.json [--repeats 50] \\
        [--model training/cpu/model-best --corpus corpus/en_ewt-ud-dev.spacy] \\
        [--config configs/cpu.cfg --baseline-config configs/baseline.cfg \\
         --train-corpus corpus/en_ewt-ud-train.spacy --train-steps 300] \\
        [--baseline training/baseline/model-best] \\
        [--before-code DIR --before-env SPACY_CRF_KERNELS=torch]

For each shape (B, T, K) of benchmarks.crf_kernels it times, on one CUDA
device, medians of synchronised runs (CUDA events): Viterbi decode and NLL
forward+backward by the kernels (kernels="auto"), by the torch code
(kernels="torch") and by pytorch-crf, and as a yardstick a forward of
spacy_crf.nn.BiLSTMCRF (hidden 256 each way, input 128) over the same batch.
It first checks that the kernels give the torch path's Viterbi paths and NLL.

With --config and --baseline-config: `spacy train` steps/s of both on the
GPU (benchmarks.train_steps: spaCy's training loop, timed after its first
steps). With --model and --corpus: the trained crf_tagger's accuracy on the
GPU (`spacy evaluate --gold-preproc`) and nlp.pipe words/s
(benchmarks.pipeline_speed) beside spaCy's tagger (--baseline, or the
one just trained by --baseline-config). --before-code DIR (a folder holding
an older spacy_crf package) and --before-env NAME=VALUE repeat the
crf_tagger's measures with that code, e.g. the code before the kernels with
the torch path. Each measure runs in its own process. Device name and
versions are printed and written. Needs CUDA and the `benchmark` extra
(pytorch-crf).

    python -m benchmarks.gpu --interpret

runs without a GPU: a smoke test of the kernels on CPU through Triton's
interpreter, at tiny shapes, against the torch path (its times mean nothing).
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Callable, Dict, List, Optional

import torch

from spacy_crf.nn import (
    BiLSTMCRF,
    CRFScores,
    allowed_from_tags,
    negative_log_likelihood,
    viterbi_decode,
)

from .common import SHAPES, make_batch, median_ms, torchcrf_for, write_json

TINY_SHAPES = [(4, 6, 3), (3, 5, 18), (2, 4, 50)]


def nll_fwd_bwd(scores: CRFScores, allowed: torch.Tensor, kernels: str) -> Callable[[], None]:
    def run() -> None:
        emissions = scores.emissions.detach().requires_grad_(True)
        transitions = scores.transitions.detach().requires_grad_(True)
        batch = CRFScores(emissions, scores.mask, transitions, scores.start, scores.end)
        loss = negative_log_likelihood(batch, allowed, kernels=kernels)
        loss.sum().backward()

    return run


def bench_shape(B: int, T: int, K: int, *, repeats: int, device: str, with_reference: bool = True) -> Dict[str, object]:
    scores, tags, lengths = make_batch(B, T, K, device)
    allowed = allowed_from_tags(tags, K)
    torch_paths, _ = viterbi_decode(scores, kernels="torch")
    torch_nll = negative_log_likelihood(scores, allowed, kernels="torch")
    # on CPU (--interpret) the kernels run only when asked for by name
    kernels = "auto" if device == "cuda" else "triton"
    from spacy_crf.nn.kernels.dispatch import use_kernels

    row: Dict[str, object] = {"shape": [B, T, K], "kernels_used": use_kernels(scores.emissions, kernels=kernels)}
    kernel_paths, _ = viterbi_decode(scores, kernels=kernels)
    kernel_nll = negative_log_likelihood(scores, allowed, kernels=kernels)
    row["same_paths"] = bool(torch.equal(kernel_paths, torch_paths))
    row["same_nll"] = bool(torch.allclose(kernel_nll, torch_nll, rtol=1e-5, atol=1e-4))
    with torch.no_grad():
        row["viterbi_kernel_ms"] = median_ms(lambda: viterbi_decode(scores, kernels=kernels), repeats, device)
    row["nll_kernel_ms"] = median_ms(nll_fwd_bwd(scores, allowed, kernels), repeats, device)
    if not with_reference:
        return row
    with torch.no_grad():
        row["viterbi_torch_ms"] = median_ms(lambda: viterbi_decode(scores, kernels="torch"), repeats, device)
    row["nll_torch_ms"] = median_ms(nll_fwd_bwd(scores, allowed, "torch"), repeats, device)
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


ROOT = Path(__file__).resolve().parent.parent


def run_json(module: str, args: List[str], env: Optional[Dict[str, str]] = None) -> Dict[str, object]:
    """Run `python -m benchmarks.<module>` in its own process; its JSON output.
    It runs from a temporary folder, with this repository on PYTHONPATH after
    env's (the working directory would come first, and shadow a --before-code
    spacy_crf): paths in args must be absolute."""
    env = {**os.environ, **(env or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [env.get("PYTHONPATH"), str(ROOT)]))
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "result.json"
        command = [sys.executable, "-m", f"benchmarks.{module}", *args, "--output", str(output)]
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, cwd=tmp)
        return json.loads(output.read_text())


def pipe_speed(model: str, corpus: str, *, repeats: int, batch_size: int, gpu_id: int, env=None) -> Dict[str, object]:
    """nlp.pipe words/s on the GPU (benchmarks.pipeline_speed)."""
    args = [
        *(str(Path(path).resolve()) for path in (model, corpus)),
        "--gpu-id",
        str(gpu_id),
        "--repeats",
        str(repeats),
        "--batch-size",
        str(batch_size),
    ]
    return {"model": model, **run_json("pipeline_speed", args, env)}


def train_speed(
    config: str, train: str, dev: str, *, steps: int, gpu_id: int, save=None, env=None
) -> Dict[str, object]:
    """`spacy train` steps/s on the GPU (benchmarks.train_steps)."""
    args = [
        *(str(Path(path).resolve()) for path in (config, train, dev)),
        "--steps",
        str(steps),
        "--gpu-id",
        str(gpu_id),
    ]
    return run_json("train_steps", args + (["--save", str(Path(save).resolve())] if save else []), env)


def gpu_accuracy(model: str, corpus: str, *, gpu_id: int, env=None) -> Dict[str, object]:
    """`spacy evaluate --gold-preproc` of the model on the GPU: its scores."""
    with tempfile.TemporaryDirectory() as tmp:
        output = Path(tmp) / "metrics.json"
        command = [
            sys.executable,
            "-m",
            "spacy",
            "evaluate",
            str(Path(model).resolve()),
            str(Path(corpus).resolve()),
            "--gold-preproc",
            "--gpu-id",
            str(gpu_id),
            "--output",
            str(output),
        ]
        # run from elsewhere: `python -m` would import spacy_crf from the working directory first
        subprocess.run(command, check=True, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL, cwd=tmp)
        scores = json.loads(output.read_text())
    return {key: scores[key] for key in ("tag_acc", "pos_acc", "ents_f") if scores.get(key) is not None}


def before_env(args: argparse.Namespace) -> Dict[str, str]:
    """The environment that runs --before-code (and --before-env)."""
    env = dict(pair.split("=", 1) for pair in args.before_env)
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(Path(args.before_code).resolve()), os.environ.get("PYTHONPATH")])
    )
    return env


def versions() -> Dict[str, Optional[str]]:
    found: Dict[str, Optional[str]] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
    }
    for package in ("triton", "pytorch-crf", "spacy", "thinc", "cupy-cuda12x", "cupy-cuda13x", "cupy"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


def kernel_table(rows: List[Dict[str, object]]) -> str:
    """The kernel rows as a Markdown table (times in ms, medians)."""
    lines = [
        "| (B, T, K) | same paths / NLL | Viterbi kernel | torch path | pytorch-crf | vs pytorch-crf "
        "| NLL fwd+bwd kernel | torch path | pytorch-crf | vs pytorch-crf | BiLSTM fwd | Viterbi / BiLSTM |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {tuple(r['shape'])} | {r['same_paths']} / {r['same_nll']} | {r['viterbi_kernel_ms']:.3f} ms "
            f"| {r['viterbi_torch_ms']:.2f} ms | {r['viterbi_torchcrf_ms']:.1f} ms | {r['viterbi_vs_torchcrf']:.0f}x "
            f"| {r['nll_kernel_ms']:.3f} ms | {r['nll_torch_ms']:.2f} ms | {r['nll_torchcrf_ms']:.1f} ms "
            f"| {r['nll_vs_torchcrf']:.0f}x | {r['bilstm_forward_ms']:.2f} ms | {100 * r['viterbi_share_of_bilstm']:.1f}% |"
        )
    return "\n".join(lines)


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--gpu-id", type=int, default=0)
    parser.add_argument(
        "--interpret", action="store_true", help="no GPU: smoke-test the kernels under Triton's interpreter"
    )
    parser.add_argument("--no-kernels", action="store_true", help="leave the kernel table out (only the pipeline)")
    parser.add_argument("--model", help="a trained crf_tagger pipeline (accuracy and nlp.pipe words/s on the GPU)")
    parser.add_argument("--baseline", help="a trained spaCy tagger pipeline (nlp.pipe words/s)")
    parser.add_argument(
        "--corpus", help="the .spacy corpus for nlp.pipe and evaluation, and the dev set for spacy train"
    )
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--pipe-repeats", type=int, default=5)
    parser.add_argument("--config", help="crf_tagger training config (spacy train steps/s)")
    parser.add_argument("--baseline-config", help="spaCy tagger training config (spacy train steps/s)")
    parser.add_argument("--train-corpus", help="the .spacy training corpus for spacy train")
    parser.add_argument("--train-steps", type=int, default=300)
    parser.add_argument("--before-code", help="a folder holding an older spacy_crf package, measured too")
    parser.add_argument("--before-env", action="append", default=[], help="NAME=VALUE for the --before-code runs")
    args = parser.parse_args(argv)
    if args.model and not args.corpus:
        parser.error("--model needs --corpus")
    if args.model and not (args.baseline or args.baseline_config):
        parser.error("--model needs --baseline or --baseline-config (spaCy's tagger to compare with)")
    if (args.config or args.baseline_config) and not (
        args.config and args.baseline_config and args.train_corpus and args.corpus
    ):
        parser.error("--config and --baseline-config go together, with --train-corpus and --corpus")
    if args.train_steps <= 30:
        parser.error("--train-steps must be more than 30")
    if args.before_env and not args.before_code:
        parser.error("--before-env goes with --before-code")
    if any("=" not in pair for pair in args.before_env):
        parser.error("--before-env takes NAME=VALUE")
    return args


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(1)
    if args.interpret:
        from spacy_crf.nn.kernels.dispatch import triton_usable

        if not triton_usable():
            sys.exit("--interpret needs Triton 3.0 or later (pip install 'triton>=3.0'), which the kernels run on")
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
            "benchmarks.gpu needs CUDA, and torch.cuda.is_available() is False here; "
            "`python -m benchmarks.gpu --interpret` smoke-tests the kernels on CPU"
        )
    torch.cuda.set_device(args.gpu_id)
    result: Dict[str, object] = {
        "device": torch.cuda.get_device_name(),
        "versions": versions(),
        "repeats": args.repeats,
        "rows": []
        if args.no_kernels
        else [bench_shape(B, T, K, repeats=args.repeats, device="cuda") for B, T, K in SHAPES],
    }
    print(f"{result['device']}; " + ", ".join(f"{k} {v}" for k, v in result["versions"].items()))
    if result["rows"]:
        print(f"medians of {args.repeats} synchronised runs (CUDA events)")
        print(kernel_table(result["rows"]))
    runs = {"crf_tagger": {}}
    if args.before_code:
        runs["crf_tagger (before)"] = before_env(args)
    baseline_dir = tempfile.mkdtemp()  # the tagger trained by --baseline-config, removed at the end
    if args.config:
        train = {
            name: train_speed(
                args.config, args.train_corpus, args.corpus, steps=args.train_steps, gpu_id=args.gpu_id, env=env
            )
            for name, env in runs.items()
        }
        baseline = args.baseline or str(Path(baseline_dir) / "tagger")
        train["tagger"] = train_speed(
            args.baseline_config,
            args.train_corpus,
            args.corpus,
            steps=args.train_steps,
            gpu_id=args.gpu_id,
            save=None if args.baseline else baseline,
        )
        result["spacy_train"] = train
        print("spacy train steps/s: " + ", ".join(f"{name} {r['steps_per_second']:.2f}" for name, r in train.items()))
    if args.model:
        baseline = args.baseline or str(Path(baseline_dir) / "tagger")
        pipe = {
            name: {
                **pipe_speed(
                    args.model,
                    args.corpus,
                    repeats=args.pipe_repeats,
                    batch_size=args.batch_size,
                    gpu_id=args.gpu_id,
                    env=env,
                ),
                **gpu_accuracy(args.model, args.corpus, gpu_id=args.gpu_id, env=env),
            }
            for name, env in runs.items()
        }
        pipe["tagger"] = pipe_speed(
            baseline, args.corpus, repeats=args.pipe_repeats, batch_size=args.batch_size, gpu_id=args.gpu_id
        )
        for name in runs:
            pipe[name]["vs_tagger"] = pipe[name]["words_per_second"] / pipe["tagger"]["words_per_second"]
        result["nlp_pipe"] = pipe
        print(
            f"nlp.pipe words/s (batch {args.batch_size}): "
            + ", ".join(f"{name} {r['words_per_second']:,}" for name, r in pipe.items())
            + "; crf_tagger tag_acc on the GPU: "
            + ", ".join(f"{name} {r.get('tag_acc')}" for name, r in pipe.items() if name != "tagger")
        )
    shutil.rmtree(baseline_dir, ignore_errors=True)
    write_json(result, args.output)


if __name__ == "__main__":
    main()
