"""A tiny, randomly initialised BERT for runs that must be fast and offline
(the project's `distill` workflow in CI, the transformer tests): one layer
of width 32, a word-level vocabulary of the words of a corpus (lowercased).

    python -m scripts.tiny_encoder assets/tiny-encoder --corpus corpus/en_ewt-ud-train.spacy [--keep]

spacy-transformers loads the folder by path (`--paths.transformer
assets/tiny-encoder`). It stands in for a real encoder (e.g.
scripts.fetch_encoder's all-MiniLM-L6-v2) where only the plumbing is
checked: its accuracy is that of a small model trained from scratch.
"""

import argparse
from pathlib import Path
from typing import Iterable, List, Optional


def save_tiny_bert(path: Path, words: Iterable[str]) -> Path:
    """Write a 1-layer BERT of width 32 and its tokenizer, whose vocabulary
    is the lowercased words, to the new folder `path`. RETURNS (Path): path."""
    import transformers

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted({w.lower() for w in words} - {""})]
    path.mkdir(parents=True)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf8")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    transformers.BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def corpus_words(path: Path) -> List[str]:
    """The words of a .spacy file's docs."""
    import spacy
    from spacy.tokens import DocBin

    vocab = spacy.blank("xx").vocab
    return [token.text for doc in DocBin().from_disk(path).get_docs(vocab) for token in doc]


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", type=Path, help="the new folder")
    parser.add_argument("--corpus", type=Path, required=True, help="a .spacy file whose words make the vocabulary")
    parser.add_argument("--keep", action="store_true", help="keep an encoder already in OUTPUT")
    args = parser.parse_args(argv)
    if args.output.exists() and args.keep and (args.output / "config.json").exists():
        print(f"Kept the encoder in {args.output}")
        return
    if args.output.exists():
        import shutil

        shutil.rmtree(args.output)
    save_tiny_bert(args.output, corpus_words(args.corpus))
    print(f"Saved a tiny BERT to {args.output}")


if __name__ == "__main__":
    main()
