"""The fast paths of the torch side, each tested against the reference in
spacy_crf.nn.crf (or torch's LSTM): dispatch.py picks among them; Triton
kernels for CUDA (triton_crf.py, triton_factored.py), Numba loops for the CPU
(numba_viterbi.py, char_cnn_numba.py) and the length-bucketed CPU BiLSTM
(bucketed_lstm.py)."""
