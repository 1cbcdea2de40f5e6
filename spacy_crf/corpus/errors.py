"""Coded error and warning messages of corpus tagging, in spaCy's style.

The codes start at E101 and W101 so that they never collide with the
component's own (spacy_crf/errors.py, E001 and W001 upwards).
"""
from ..errors import ErrorsWithCodes


class CorpusErrors(metaclass=ErrorsWithCodes):
    E101 = "Input not found: '{path}'. Pass a file or a folder of files."
    E102 = (
        "The input '{path}' holds no documents: {reason}. Check the path, the "
        "input format and the text field."
    )
    E103 = (
        "Cannot load the pipeline '{model}': {reason}. Pass a pipeline folder "
        "(e.g. training/cpu/model-best) or the name of an installed pipeline "
        "package (e.g. en_crf_tagger_ewt)."
    )
    E104 = (
        "The pipeline '{model}' has no crf_tagger component (its components: "
        "{components}). Tag with a pipeline trained with spacy-crf."
    )
    E105 = "Bad record in {path}, {where}: {reason} (id {id})."
    E106 = (
        "Cannot tell the format of input file '{path}' from its suffix: pass "
        "one of {options} as the input format."
    )
    E107 = "Unknown {setting} '{value}': expected one of {options}."
    E108 = (
        "The output folder '{path}' holds a job with other settings ({detail}). "
        "Write to a new folder, or delete this one to start over."
    )
    E109 = (
        "The ray engine needs Ray Data: pip install \"spacy-crf[ray]\" (ray[data] "
        "on every node of the cluster)."
    )
    E110 = "The Parquet file '{path}' has no column '{column}' (its columns: {columns})."
    E111 = "{setting} must be at least {minimum}, got {value}."
    E112 = (
        "The local engine runs on a GPU with one worker only (spaCy's n_process "
        "is for CPUs); got workers={workers}, gpus_per_worker={gpus}. Use "
        "--engine ray for several GPU workers."
    )
    E113 = "{action} Parquet needs pyarrow: pip install \"spacy-crf[corpus]\"."
    E114 = "Bad record in {path}, {where}: the pipeline cannot tag it: {reason} (id {id})."
    E115 = "Bad record in {path}, {where}: its output cannot be written: {reason} (id {id})."
    E116 = (
        "The input changed since the job in '{path}' began ({detail}): resuming "
        "would tag some records twice and others never. Start over with "
        "--overwrite (overwrite=True), or write to a new folder."
    )
    E117 = (
        "The output folder '{output}' {relation} the input '{input}': the job "
        "would read its own output as input, or write over its input. Write "
        "to a folder apart from the input."
    )
    E118 = "The output '{path}' is not a folder that can be written: {reason}. Pass a folder (it is created if missing)."
    E119 = "Cannot write shard '{shard}' into '{path}': {reason}."


class CorpusWarnings(metaclass=ErrorsWithCodes):
    W101 = (
        "Not deleting '{file}', which the manifest of '{path}' lists: it is "
        "not inside the output folder."
    )


class BadRecordError(ValueError):
    """A record that cannot be tagged, raised with `on_error="raise"`."""
