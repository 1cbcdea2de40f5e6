"""Coded error messages, in spaCy's style: `raise ValueError(Errors.E002.format(...))`."""

# Codes no longer raised (never reused): one per setting, until every
# component setting was checked by its declaration (E039); E040, an unknown
# setting, since the components take their settings as named arguments
# (spaCy's config validation names an unknown key first).
RETIRED = ("E001", "E004", "E015", "E018", "E021", "E031", "E032", "E040")
# Corpus codes never used (never to be): branches were given ranges after it.
CORPUS_UNUSED = ("E123",)


class ErrorsWithCodes(type):
    """Metaclass: `Errors.E002` reads as "[E002] message" (spaCy's pattern)."""

    def __getattribute__(cls, code: str) -> str:
        message = super().__getattribute__(code)
        if code.startswith("__"):
            return message
        return f"[{code}] {message}"


class UnsafeModelError(ValueError):
    """A model file that would run code when loaded (E017)."""


class DamagedModelError(ValueError):
    """Saved files that fail their checks: a checksum (E007), non-finite
    weights (E033) or an invalid cfg (E035)."""


class RefusedFileError(ValueError):
    """A component file that is not read at all: not a regular file, or
    over its size bound (E047)."""


class NonFiniteScoresError(ValueError):
    """The model's scores hold NaN or inf (E034)."""


class Errors(metaclass=ErrorsWithCodes):
    E002 = (
        "Label '{label}' is not a Universal POS tag, so component '{name}' "
        'cannot write it to token.pos_ (target "pos", "tag+pos", whose '
        'labels are "TAG|POS" pairs, or "pos+morph" and "tag+pos+morph", whose '
        "labels have a POS feature). Valid tags: {options}."
    )
    E003 = (
        "The gold data for component '{name}' has the {kind} '{label}', which "
        "is not among its {n_labels} {kind}s. Initialize the component on data "
        "that contains every {kind} (or pass them all with `labels=`, e.g. from "
        "`spacy init labels`), add it with `add_label`, or set the component's "
        "`learn_new_labels` to add it as it comes (in `spacy train`, for a "
        "sourced component: the callback spacy_crf.learn_new_labels.v1 in "
        "[initialize.before_init])."
    )
    E005 = (
        "Component '{name}' found no labels for target '{target}' in the "
        "training data: no token has a gold {attr}. Check the corpus and the "
        "component's `target` setting."
    )
    E006 = (
        "{what} of component '{name}' contains NaN or inf. Lower the learning "
        "rate, enable gradient clipping, or check the input vectors."
    )
    E007 = (
        "Could not load the model of component '{name}': {reason}. The file is "
        "corrupt, truncated or not a spacy-crf model; the component was left "
        "unchanged."
    )
    E008 = (
        "The saved model of component '{name}' does not match its config: "
        "{detail}. Load it with the config it was trained with; the component "
        "was left unchanged."
    )
    E009 = (
        "The CRF layer of component '{name}' is not built yet: call "
        "`nlp.initialize()` before training or prediction, or load a trained "
        "pipeline."
    )
    E010 = "Label must be a string, got {type}: {label!r}."
    E011 = "The CRF layer needs its sizes before it can be built: input width nI={nI}, number of labels nO={nO}."
    E012 = (
        "Component '{name}' was given no labels: `labels=` is empty. Pass its "
        "labels (e.g. from `spacy init labels`), or None to collect them from "
        "the training examples."
    )
    E013 = (
        "Label '{label}' does not fit the tag scheme {scheme}: expected 'O' or "
        "a prefix of the scheme, a hyphen and a type, such as 'B-PER'."
    )
    E014 = "Unknown constraints '{scheme}': expected one of {options}."
    E016 = (
        "The embedding's known-word list (min_count={min_count}) was never "
        "counted: it is counted when the model is initialized (over the "
        "training data by the component's initialize). Call `nlp.initialize()` "
        "before using the spacy_crf.HashCharEmbed.v2 layer, or set min_count = 0."
    )
    E017 = (
        "Refused to load the model: its torch weights hold Python objects other "
        "than tensors, and loading them could run code ({reason}). Load models "
        "only from sources you trust; this file was not loaded."
    )
    E019 = (
        "Label '{label}' does not fit target \"{target}\": expected {expected}, "
        "in UD FEATS format (features 'Field=Value' joined by '|')."
    )
    E020 = (
        "Component '{name}' has target \"{target}\": entity probabilities "
        "(store_entity_probs, ents_threshold, candidates_key) and rejected "
        "spans (incorrect_spans_key) are settings of crf_ner (in 0.x: crf_tagger "
        'with target "ents").'
    )
    E022 = "Unknown transitions '{value}' for spacy_crf.BiLSTMCRF: expected one of {options}."
    E023 = (
        "Component '{name}' has a model with transitions = \"factored\", which "
        "scores transitions between the classes of its labels, but its target "
        "'{target}' gives its labels no class. Factored transitions work with "
        'the targets "pos+morph" (a bundle\'s class is its UPOS), '
        '"tag+pos+morph" and "tag+pos" (their UPOS too); use transitions = "full" '
        "for the others."
    )
    E024 = (
        "Component '{name}' was given temperature={value!r}: a number "
        "tau from 0.01 to 100 is expected (the CRF's probabilities are those of "
        "exp(Score / tau); 1.0 keeps the model's own, and "
        "`python -m spacy_crf calibrate` fits it on annotated docs)."
    )
    E025 = "Cannot calibrate {what}: {reason}."
    E026 = "Component '{name}' was given quantize={value!r}: expected one of {options}."
    E027 = (
        "Component '{name}' was given quantize='int8', but torch {version} has no dynamic quantization "
        "(torch.ao.quantization.quantize_dynamic). Use quantize='none', or a torch that has it."
    )
    E028 = "Unknown emissions '{value}' for spacy_crf.BiLSTMCRF: expected one of {options}."
    E029 = (
        "Component '{name}' has a model with emissions = \"composed\", which "
        "scores each label as the sum of its parts, but its target '{target}' "
        "gives its labels no parts (or none of its labels has one). Composed emissions work with the targets "
        '"pos+morph" (a bundle\'s UPOS and features), "morph" (its '
        'features), "tag+pos" (its tag and UPOS) and "tag+pos+morph" '
        "(its tag, UPOS and features); use emissions = "
        '"full" for the others.'
    )

    E030 = (
        "spacy_crf.SentencesAndDocs.v1 was given whole_docs={value!r} and "
        "gold_preproc={gold_preproc!r}: whole_docs is the share of docs given whole, "
        "a number from 0 to 1, and the reader always keeps the corpus's own words "
        "(gold_preproc = true; for the tokenizer's, use spacy.Corpus.v1 with gold_preproc = false)."
    )

    E033 = (
        "The weights of component '{name}' hold NaN or inf (in {where}): the "
        "file is damaged or the training that saved it diverged. The "
        "component was left unchanged."
    )
    E034 = (
        "The model's scores for a batch of {n_docs} docs ({n_tokens} tokens) "
        "hold NaN or inf, so no labels were written: its weights or its input "
        "vectors hold NaN or inf."
    )
    E035 = "The saved cfg of component '{name}' is invalid: {reason}. The component was left unchanged."
    E036 = (
        "Component '{name}' has nothing to rehearse: call `nlp.resume_training()` "
        "first, which keeps a copy of the component as it is to rehearse towards."
    )
    E037 = (
        "Component '{name}' has the 0.x target \"{target}\" with constraints "
        '"{constraints}": crf_morphologizer has no tag scheme. Set constraints '
        '= "none", or use crf_tagger with a tag scheme.'
    )
    E038 = (
        "crf_ner '{name}' was given the label '{label}', a tag of its scheme "
        "{scheme}: like spaCy's ner it takes entity types ('{entity_type}'), and "
        "adds the scheme's tags for each itself."
    )
    E039 = "Component '{name}' was given {setting} = {value!r}: expected {allowed}."
    E041 = "{architecture} was given {setting} = {value!r}: expected {allowed}. The model was not built."
    E042 = "Cannot resume this training: {reason}."
    E043 = (
        "Label {label!r} cannot be added to component '{name}': {reason}. A label is a non-empty "
        "string of printable characters that UTF-8 can encode; the component was left unchanged."
    )
    E044 = (
        "n-best was given k = {k!r}: expected a whole number from 1 to {bound} ({why}; memory grows "
        "with k x tokens x labels, so {how})."
    )
    E045 = (
        "Component '{name}' would have {n} labels, over the bound of {bound} {what}: a transition "
        "matrix of n x n cells is built and trained for them. The component was left unchanged; {how}."
    )
    E046 = "The environment variable {env} = {value!r} must be a whole number of at least 1: the bound on {name}."
    E047 = "Cannot read the file '{path}' of component '{name}': {reason}. The component was left unchanged."
    E050 = (
        "{feature} needs torch, which is not installed: spacy-crf serves (loads pipelines, tags, gives "
        "marginals, n-best paths, uncertainty and entity probabilities) without it, and trains with it. "
        "Install it with: {extra}"
    )
    E051 = (
        "These weights were saved by spacy-crf 1.x or earlier as torch.save bytes, which only torch can "
        "read, and torch is not installed. Re-save the pipeline once where torch is installed, to the "
        "torch-free format: python -c \"import spacy; spacy.load('PIPELINE').to_disk('OUTPUT')\" "
        "(or install torch: {extra})."
    )
    E060 = (
        "Component '{name}' reads static vectors (include_static_vectors = true), "
        "but the pipeline's vocab has none. Load them first: [initialize] vectors "
        "in the config (`spacy train --paths.vectors`), or nlp.vocab.vectors before "
        "initialize; or set include_static_vectors = false."
    )
    E061 = (
        "spacy_crf.learn_new_labels.v1 was given the component '{component}': "
        "{reason}. It takes the names of spacy-crf components of the pipeline "
        "({options})."
    )
    E065 = (
        "Component '{name}' cannot distil from {teacher}: the teacher must be a crf_tagger, "
        "crf_morphologizer or crf_ner (or cached scores of one) with the same labels."
    )
    E066 = (
        "Component '{name}' and its teacher have different labels: only the student has {student_only}, "
        "only the teacher has {teacher_only}. Build the student with the teacher's labels "
        "(initialize it with labels=teacher.label_data, or use `python -m spacy_crf distill`)."
    )
    E067 = (
        "Component '{name}' cannot distil example {index}: the teacher's doc (example.reference) has "
        "{n_teacher} tokens, the student's (example.predicted) {n_student}. Distillation needs both "
        "sides tokenized alike."
    )
    E068 = (
        "Component '{name}' cannot distil from its teacher: the student's {scheme} constraints forbid "
        "{what} that the teacher allows (the divergence would be infinite). Give both the same constraints."
    )
    E069 = "Cannot distil into the student's component '{name}': {reason}."
    E070 = (
        "The cached teacher scores of component '{name}' cannot be used: {reason}. Delete the "
        "output's teacher_scores/ folder to score the training docs anew."
    )
    E071 = (
        'Cannot read distillation text from {path}: {reason} (.txt: a doc per line; .jsonl: a "text" per line; .spacy).'
    )


class Warnings(metaclass=ErrorsWithCodes):
    W001 = (
        "Numba could not set up the CPU Viterbi ({error}); decoding with "
        "torch's code instead (the torch-free engine: numpy's), the same paths, slower. Where the package's "
        "folder is read-only, set NUMBA_CACHE_DIR to a writable folder."
    )
    W002 = (
        "Numba could not set up the character CNN's CPU loops ({error}); "
        "predicting and training with Thinc's code instead (the same vectors "
        "and gradients, slower). Where the package's folder is read-only, set "
        "NUMBA_CACHE_DIR to a writable folder."
    )
    W003 = (
        "Component '{name}' is a crf_tagger with target \"{target}\", which "
        "{factory} does since spacy-crf 1.0: it is built as one (the same labels "
        'and scores). Use factory = "{factory}" in new configs.'
    )
    W004 = (
        "crf_ner '{name}' was initialized without entity types (none in the "
        "examples, none added): like spaCy's ner it writes no entities. Give "
        "it annotated examples or add_label() types before initialize()."
    )


# Corpus tagging (spacy_crf.corpus): E101 and W101 upwards, apart from the component's.


class CorpusErrors(metaclass=ErrorsWithCodes):
    E101 = "Input not found: '{path}'. Pass a file or a folder of files."
    E102 = "The input '{path}' holds no documents: {reason}. Check the path, the input format and the text field."
    E103 = (
        "Cannot load the pipeline '{model}': {reason}. Pass a pipeline folder "
        "(e.g. training/cpu/model-best) or the name of an installed pipeline "
        "package (e.g. en_crf_tagger_ewt)."
    )
    E104 = (
        "The pipeline '{model}' has no spacy-crf component (crf_tagger, crf_morphologizer "
        "or crf_ner; its components: "
        "{components}). Tag with a pipeline trained with spacy-crf."
    )
    E105 = "Bad record in {path}, {where}: {reason} (id {id})."
    E106 = "Cannot tell the format of input file '{path}' from its suffix: pass one of {options} as the input format."
    E107 = "Unknown {setting} '{value}': expected one of {options}."
    E108 = (
        "The output folder '{path}' holds a job with other settings ({detail}). "
        "Write to a new folder, or delete this one to start over."
    )
    E109 = 'The ray engine needs Ray Data: pip install "spacy-crf[ray]" (ray[data] on every node of the cluster).'
    E110 = "The Parquet file '{path}' has no column '{column}' (its columns: {columns})."
    E111 = "{setting} must be at least {minimum}, got {value}."
    E112 = (
        "The local engine runs on a GPU with one worker only (spaCy's n_process "
        "is for CPUs); got workers={workers}, gpus_per_worker={gpus}. Use "
        "--engine ray for several GPU workers."
    )
    E113 = '{action} Parquet needs pyarrow: pip install "spacy-crf[corpus]".'
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
    E118 = (
        "The output '{path}' is not a folder that can be written: {reason}. Pass a folder (it is created if missing)."
    )
    E119 = "Cannot write shard '{shard}' into '{path}': {reason}."
    E120 = (
        "'{path}' is a symbolic link inside the output folder: the job writes "
        "and deletes only real files and folders inside it. Remove the link "
        "(or write to a new folder)."
    )
    E121 = (
        "Another job is writing into '{path}' ({holder}): one job per output "
        "folder. Wait for it to finish, or write to another folder."
    )
    E122 = (
        "The input file '{file}' changed while the job ran ({detail}): its "
        "records from there on would be lost or tagged from another file. "
        "Start over with --overwrite (overwrite=True) once the file is final."
    )
    E124 = (
        "'{path}' is not a regular file of its own ({reason}): the job locks and writes only "
        "regular files inside the output folder, never a file with other names, a device or a "
        "FIFO. Remove it (or write to a new folder)."
    )
    E125 = "{setting} must be at most {maximum}, got {value}: {why}."
    E126 = (
        "The text field and the id field are both '{field}': a record's id would be its text. Pass "
        "--id-field (id_field) with another field, or leave the records without ids (FILE:LINE)."
    )


class CorpusWarnings(metaclass=ErrorsWithCodes):
    W101 = "Not deleting '{file}', which the manifest of '{path}' lists: it is not inside the output folder."
    W102 = "Not deleting '{file}', which the manifest of '{path}' lists: it is not a regular file."


class BadRecordError(ValueError):
    """A record that cannot be tagged, raised with `on_error="raise"`."""
