"""`spacy_crf.HashCharEmbed.v1`: hash embeddings of several lexical attributes
plus character embeddings, mixed by a Maxout layer into one vector per token."""
from typing import List, Union

from spacy.ml import _character_embed
from spacy.ml.models.tok2vec import MultiHashEmbed
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Maxout, Model, chain, concatenate, list2ragged, ragged2list, with_array
from thinc.types import Floats2d


@registry.architectures("spacy_crf.HashCharEmbed.v1")
def build_hash_char_embed(
    width: int,
    attrs: List[Union[str, int]],
    rows: List[int],
    nM: int,
    nC: int,
    include_static_vectors: bool = False,
) -> Model[List[Doc], List[Floats2d]]:
    """Embed each token from its attributes and its characters.

    width (int): output width, also the width of the hash embeddings.
    attrs (List[Union[str, int]]): attributes to hash-embed, e.g.
        ["NORM", "PREFIX", "SUFFIX", "SHAPE"].
    rows (List[int]): rows of each attribute's embedding table.
    nM (int): width of each character embedding.
    nC (int): number of UTF-8 bytes embedded per word, half from its start and
        half from its end (spaCy's CharacterEmbed).
    include_static_vectors (bool): also use the vocab's static vectors.
    RETURNS (Model[List[Doc], List[Floats2d]]): one (n_tokens, width) array per doc.
    """
    chars = chain(_character_embed.CharacterEmbed(nM=nM, nC=nC), list2ragged())
    hashes = chain(
        MultiHashEmbed(
            width=width,
            attrs=attrs,
            rows=rows,
            include_static_vectors=include_static_vectors,
        ),
        list2ragged(),
    )
    mix = with_array(Maxout(width, nM * nC + width, nP=3, normalize=True, dropout=0.0))
    return chain(concatenate(chars, hashes), mix, ragged2list())
