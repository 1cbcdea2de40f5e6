"""The torch-free inference engine: the BiLSTM-CRF's prediction on numpy and
Numba (no torch, no spaCy).

- weights.py: the weights format (numpy arrays in msgpack), read and written
  without torch;
- lstm.py, network.py: the BiLSTM and the emission layer over a batch of rows;
- viterbi.py: the CPU Viterbi kernels (full and factored transitions), which
  the torch path runs too;
- crf.py: the forward-backward recursions (log Z, marginals), n-best;
- batch.py: `ArrayCRFBatch`, the model's output for a batch of docs, as
  `spacy_crf.ml.CRFBatch` gives it on the torch path.
"""

NEG_INF = -1e9  # log(0), as spacy_crf.nn.crf.NEG_INF
