"""paragrad.text: tokenizers for language models.

CharTokenizer (one id per character, nanoGPT's shakespeare_char), BPETokenizer (byte-level BPE
trained locally with the Hugging Face `tokenizers` library, an optional dependency:
`pip install "paragrad[text]"`) and load_tokenizer, which reads either kind back from its
tokenizer.json. Both kinds answer encode, decode, vocab_size, eot_id, to_json and save.
"""
from .bpe_tokenizer import EOT, BPETokenizer  # noqa: F401
from .char_tokenizer import CharTokenizer  # noqa: F401
from .tokenizer_file import load_tokenizer  # noqa: F401
