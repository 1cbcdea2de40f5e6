"""CRF kernels side by side with pytorch-crf, on random emissions of variable length.

    python -m benchmarks.crf_kernels [--repeats 15] [--threads 1] [--output metrics/crf_kernels.json]
        [--shapes 256x40x18 256x40x50 1024x60x50 16x512x20]

For each shape (B, T, K) it times, in one process, medians over repeats:
Viterbi decode to padded tensors, NLL forward+backward, and as a yardstick a
BiLSTM forward (hidden 256 each way, input 128) over the same batch. It first
checks that spacy-crf and pytorch-crf give the same paths and the same NLL.
Needs the `benchmark` extra (pytorch-crf).
"""

import argparse
from pathlib import Path

import torch

from spacy_crf.nn import (
    CRFScores,
    allowed_from_tags,
    negative_log_likelihood,
    viterbi_decode,
)

from .common import SHAPES, make_batch, median_ms, torchcrf_for, write_json


def check_agreement(scores, tags, crf):
    ours, _ = viterbi_decode(scores)
    theirs = crf.decode(scores.emissions, mask=scores.mask)
    lengths = scores.mask.sum(1).tolist()
    same_paths = all(ours[b, :n].tolist() == theirs[b] for b, n in enumerate(lengths))
    our_nll = negative_log_likelihood(scores, allowed_from_tags(tags, scores.emissions.shape[2]))
    their_nll = -crf(scores.emissions, tags, mask=scores.mask, reduction="none")
    same_nll = torch.allclose(our_nll, their_nll, rtol=1e-4, atol=1e-3)
    return same_paths, same_nll


def bench_shape(B, T, K, repeats):
    scores, tags, lengths = make_batch(B, T, K)
    crf = torchcrf_for(scores)
    same_paths, same_nll = check_agreement(scores, tags, crf)
    allowed = allowed_from_tags(tags, K)

    def ours_nll():
        emissions = scores.emissions.clone().requires_grad_(True)
        transitions = scores.transitions.clone().requires_grad_(True)
        negative_log_likelihood(
            CRFScores(emissions, scores.mask, transitions, scores.start, scores.end), allowed
        ).sum().backward()

    def theirs_nll():
        emissions = scores.emissions.clone().requires_grad_(True)
        crf.zero_grad()
        (-crf(emissions, tags, mask=scores.mask, reduction="sum")).backward()

    lstm = torch.nn.LSTM(128, 256, batch_first=True, bidirectional=True)
    inputs = torch.randn(B, T, 128)

    def lstm_forward():
        with torch.no_grad():
            packed = torch.nn.utils.rnn.pack_padded_sequence(inputs, lengths, batch_first=True, enforce_sorted=False)
            lstm(packed)

    with torch.no_grad():
        row = {
            "shape": [B, T, K],
            "same_paths": same_paths,
            "same_nll": same_nll,
            "viterbi_ms": median_ms(lambda: viterbi_decode(scores), repeats),
            "torchcrf_viterbi_ms": median_ms(lambda: crf.decode(scores.emissions, mask=scores.mask), repeats),
        }
    row["nll_fwd_bwd_ms"] = median_ms(ours_nll, repeats)
    row["torchcrf_nll_fwd_bwd_ms"] = median_ms(theirs_nll, repeats)
    row["bilstm_forward_ms"] = median_ms(lstm_forward, max(3, repeats // 3))
    row["viterbi_speedup"] = row["torchcrf_viterbi_ms"] / row["viterbi_ms"]
    row["nll_speedup"] = row["torchcrf_nll_fwd_bwd_ms"] / row["nll_fwd_bwd_ms"]
    row["viterbi_share_of_bilstm"] = row["viterbi_ms"] / row["bilstm_forward_ms"]
    return row


def shape(text: str) -> tuple:
    """ "256x40x18" -> (256, 40, 18)."""
    try:
        B, T, K = (int(n) for n in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shape is BxTxK, e.g. 256x40x18, not {text!r}") from None
    return B, T, K


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--output", type=Path)
    parser.add_argument(
        "--shapes",
        nargs="+",
        type=shape,
        default=SHAPES,
        metavar="BxTxK",
        help="batch size x longest length x labels of each batch timed",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = [bench_shape(B, T, K, args.repeats) for B, T, K in args.shapes]
    print(f"torch {torch.__version__}, {args.threads} thread(s), median of {args.repeats} (ms)")
    print(
        "| (B, T, K) | same paths / NLL | Viterbi | pytorch-crf | speed-up | NLL fwd+bwd | pytorch-crf | speed-up | BiLSTM fwd | Viterbi / BiLSTM |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {tuple(r['shape'])} | {r['same_paths']} / {r['same_nll']} | {r['viterbi_ms']:.2f} | {r['torchcrf_viterbi_ms']:.2f} "
            f"| {r['viterbi_speedup']:.1f}x | {r['nll_fwd_bwd_ms']:.2f} | {r['torchcrf_nll_fwd_bwd_ms']:.2f} "
            f"| {r['nll_speedup']:.1f}x | {r['bilstm_forward_ms']:.1f} | {100 * r['viterbi_share_of_bilstm']:.0f}% |"
        )
    write_json({"threads": args.threads, "repeats": args.repeats, "rows": rows}, args.output)


if __name__ == "__main__":
    main()
