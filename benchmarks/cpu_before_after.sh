#!/usr/bin/env bash
# nlp.pipe words/s on the CPU of one trained pipeline with this code and with an older spacy_crf
# (BEFORE: a checkout, e.g. `git worktree add /tmp/before COMMIT`), and of a baseline pipeline,
# one process each, in turn, ROUNDS times (default 5):
#
#     bash benchmarks/cpu_before_after.sh MODEL BASELINE CORPUS BEFORE OUT
#
# -> OUT/after_N.json, OUT/before_N.json, OUT/baseline_N.json (benchmarks.pipeline_speed: one
# thread, freed memory kept in the process, the median of REPEATS runs, default 7). Paths may be
# relative to the repository root, where this runs.
set -euo pipefail
model=$(realpath "${1:?usage: cpu_before_after.sh MODEL BASELINE CORPUS BEFORE OUT}")
baseline=$(realpath "$2")
corpus=$(realpath "$3")
before=$(realpath "$4")
mkdir -p "$5"
out=$(realpath "$5")
root=$(pwd)
speed() {  # speed DIR MODEL OUT: from DIR, whose spacy_crf comes first on the path
    (cd "$1" && python -c "import spacy_crf, sys; sys.exit(not spacy_crf.__file__.startswith('$1'))" \
        && python -m benchmarks.pipeline_speed "$2" "$corpus" --repeats "${REPEATS:-7}" --threads 1 \
            --allocator steady --output "$3" >/dev/null)
}
for round in $(seq "${ROUNDS:-5}"); do
    speed "$before" "$model" "$out/before_$round.json"
    speed "$root" "$model" "$out/after_$round.json"
    speed "$root" "$baseline" "$out/baseline_$round.json"
    echo "round $round done"
done
