#!/usr/bin/env bash
# The converged comparison on the full train sets, one run at a time, on one GPU:
#
#     bash benchmarks/converged_full.sh OUT [RUN ...]
#
# RUN: tag_crf tag_spacy morph_crf morph_spacy ner_crf ner_spacy ner_beam (default: all seven, in
# that order). Each is `python -m benchmarks.converged` with the protocol of the 10% runs (learning
# rate, warm-up, dev score every 50 steps, patience 500, cap 3000: benchmarks/converged.py) on the
# whole train set of UD English EWT (tags, UPOS and features) or Universal NER English EWT
# (entities), the model chosen on dev half a and scored on dev half b. As each run lands, its
# run.json is copied to OUT/RUN_sSEED.json (benchmarks/runs/converged/ takes it as it is), so a
# cut session keeps every finished run; OUT/converged_full.log has each run's start and end.
#
# Environment: CORPUS (corpus), ENCODER (assets/all-MiniLM-L6-v2), GPU_ID (0; -1 for the CPU),
# SEED (0), WORK (the trained pipelines; default a temporary folder, deleted at the end),
# RESUMABLE (1: each run checkpoints at every evaluation into WORK/NAME/checkpoint, and the same
# command again resumes it; a run whose record is already in OUT is skipped; needs WORK) and
# PROTOCOL (JSON overrides of the protocol, for smoke tests only).
# Needs CORPUS/{en_ewt-ud-train,ewt-dev-a,ewt-dev-b,uner-train,uner-dev-a,uner-dev-b}.spacy: the
# project's convert commands and `python -m benchmarks.split_corpus DEV A B --interleave`.
# Run from the project root. Exits 2 before any training on an unknown RUN, and 1 when a run
# failed (the others still run). Set WORK to keep the trained pipelines (for
# benchmarks.converged_probabilities, which reads a run's model-best).
set -uo pipefail
out=${1:?usage: converged_full.sh OUT [RUN ...]}
shift
all=(tag_crf tag_spacy morph_crf morph_spacy ner_crf ner_spacy ner_beam)
runs=("$@")
[[ ${#runs[@]} -gt 0 ]] || runs=("${all[@]}")
for run in "${runs[@]}"; do  # every name checked before anything trains
    [[ " ${all[*]} " == *" $run "* ]] || { echo "unknown run '$run' (one of: ${all[*]})" >&2; exit 2; }
done
[[ -f configs/trf_ner.cfg ]] || { echo "run from the project root (configs/ not found)" >&2; exit 2; }
corpus=${CORPUS:-corpus}
encoder=${ENCODER:-assets/all-MiniLM-L6-v2}
seed=${SEED:-0}
work=${WORK:-}
resumable=${RESUMABLE:-0}
[[ $resumable == 0 || -n $work ]] || { echo "RESUMABLE=1 needs WORK (where the checkpoints stay)" >&2; exit 2; }
[[ -n $work ]] || { work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; }
mkdir -p "$out" "$work"
status=0
for run in "${runs[@]}"; do
    case $run in
        tag_crf) config=trf_tagger.cfg data=ewt ;;
        tag_spacy) config=trf_tagger_spacy.cfg data=ewt ;;
        morph_crf) config=trf_morph.cfg data=ewt ;;
        morph_spacy) config=trf_morph_spacy.cfg data=ewt ;;
        ner_crf) config=trf_ner.cfg data=uner ;;
        ner_spacy) config=trf_ner_spacy.cfg data=uner ;;
        ner_beam) config=trf_ner_beam.cfg data=uner ;;
    esac
    train=$corpus/$([[ $data == ewt ]] && echo en_ewt-ud-train || echo uner-train).spacy
    name=${run}_s$seed
    if [[ $resumable == 1 && -f $out/$name.json ]]; then
        echo "$(date -u +%FT%TZ) skip $name (recorded)" >> "$out/converged_full.log"
        continue
    fi
    echo "$(date -u +%FT%TZ) start $name" >> "$out/converged_full.log"
    python3 -m benchmarks.converged "configs/$config" --train "$train" \
        --dev-select "$corpus/$data-dev-a.spacy" --dev-score "$corpus/$data-dev-b.spacy" \
        --encoder "$encoder" --seed "$seed" --gpu-id "${GPU_ID:-0}" --protocol "${PROTOCOL:-{\}}" \
        $([[ $resumable == 1 ]] && echo --resumable) --output "$work/$name" >> "$work/$name.log" 2>&1
    rc=$?
    echo "$(date -u +%FT%TZ) end $name rc=$rc" >> "$out/converged_full.log"
    if [[ $rc -eq 0 ]]; then
        cp "$work/$name/run.json" "$out/$name.json" || status=1
    else
        status=1
        tail -20 "$work/$name.log" >> "$out/converged_full.log"
    fi
done
exit $status
