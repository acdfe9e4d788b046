"""paragrad.text: tokenizers for language models.

CharTokenizer (one id per character, nanoGPT's shakespeare_char), BPETokenizer (byte-level BPE
trained locally with the Hugging Face `tokenizers` library, an optional dependency:
`pip install "paragrad[text]"`) and load_tokenizer, which reads either kind back from its
tokenizer.json. Both kinds answer encode, decode, token_bytes, vocab_size, eot_id, to_json and
save. fingerprint(tokenizer or path) is a tokenizer's identity (a sha256 of its canonical JSON);
StreamDecoder decodes generated text a token at a time.
"""
from .bpe_tokenizer import EOT, BPETokenizer  # noqa: F401
from .char_tokenizer import CharTokenizer  # noqa: F401
from .stream_decoder import StreamDecoder  # noqa: F401
from .tokenizer_file import fingerprint, load_tokenizer  # noqa: F401
