#!/usr/bin/env bash
# The GPU checks in one run, on a machine with CUDA torch, cupy and triton and the project installed:
#
#     bash benchmarks/gpu_check.sh OUT [BEFORE]
#
# 1. the GPU tests (pytest -m gpu)                                  -> OUT/pytest_gpu.txt
# 2. nlp.pipe words/s on the GPU of a crf_tagger pipeline (configs/cpu.cfg) and of spaCy's tagger
#    (configs/baseline.cfg), both initialized on 300 EWT train sentences (speed hardly depends on
#    the weights), with this code and, given BEFORE (a folder holding an older spacy_crf package),
#    with that code too; ROUNDS=N repeats it in turn                -> OUT/gpu_pipeline_init_N.json
# 3. predict stage by stage on the GPU: EWT with configs/cpu.cfg, Turkish IMST with
#    configs/cpu_morph.cfg (981 bundles, factored transitions)      -> OUT/stages_gpu_*.json
#    (STAGES=0 leaves them out)
#
# Needs corpus/en_ewt-ud-{train,dev}.spacy and corpus/tr_imst-ud-{train,dev}.spacy (project.yml's
# convert commands). The models are saved by BEFORE's code when given, so that both codes load them.
# Exits non-zero when a GPU test fails.
set -uo pipefail
out=${1:?usage: gpu_check.sh OUT [BEFORE]}
before=${2:-}
mkdir -p "$out"
work=$(mktemp -d)
status=0

echo "== GPU tests"
timeout 240 python3 -m pytest -m gpu -q -rs -p no:cacheprovider tests >"$out/pytest_gpu.txt" 2>&1 || status=1
tail -5 "$out/pytest_gpu.txt"

echo "== nlp.pipe on the GPU (initialized pipelines)"
root=$(pwd)
saver_path=${before:+$(cd "$before" && pwd):}${PYTHONPATH:-}
# from $work: `python3 -` puts the working directory first, which would shadow BEFORE's spacy_crf
(cd "$work" && PYTHONPATH=$saver_path python3 - "$root" <<'EOF'
import sys
import spacy
from spacy.training import Corpus

root = sys.argv[1]
for config, name in [("configs/cpu.cfg", "crf_tagger"), ("configs/baseline.cfg", "tagger")]:
    nlp = spacy.util.load_model_from_config(spacy.util.load_config(f"{root}/{config}"), auto_fill=True)
    examples = list(Corpus(f"{root}/corpus/en_ewt-ud-train.spacy", gold_preproc=True, limit=300)(nlp))
    nlp.initialize(lambda: examples)
    nlp.to_disk(name)
    print("saved", name, "by", __import__("spacy_crf").__file__)
EOF
)
for round in $(seq "${ROUNDS:-1}"); do  # ROUNDS=N: the pipeline measures N times over, in turn
    timeout 300 python3 -m benchmarks.gpu --no-kernels --model "$work/crf_tagger" --baseline "$work/tagger" \
        --corpus corpus/en_ewt-ud-dev.spacy ${before:+--before-code "$before"} --pipe-repeats 7 \
        --output "$out/gpu_pipeline_init_$round.json" | tail -1
done

[[ ${STAGES:-1} == 0 ]] && { rm -rf "$work"; exit $status; }
echo "== predict by stage on the GPU"
timeout 120 python3 -m benchmarks.gpu_stages corpus/en_ewt-ud-dev.spacy --config configs/cpu.cfg \
    --init-corpus corpus/en_ewt-ud-train.spacy --gpu-id 0 --output "$out/stages_gpu_en_ewt_cpu_init.json" | tail -8
timeout 120 python3 -m benchmarks.gpu_stages corpus/tr_imst-ud-dev.spacy --config configs/cpu_morph.cfg \
    --init-corpus corpus/tr_imst-ud-train.spacy --gpu-id 0 --output "$out/stages_gpu_tr_imst_cpu_morph_init.json" | tail -8

rm -rf "$work"
exit $status
