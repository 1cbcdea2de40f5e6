"""Tag a corpus with a pipeline of spacy-crf components: readers, writers and two engines
(local nlp.pipe, Ray Data) behind one function, `tag_corpus`."""

from ..errors import BadRecordError, CorpusErrors
from .job import TagSummary, tag_corpus

__all__ = ["BadRecordError", "CorpusErrors", "TagSummary", "tag_corpus"]
