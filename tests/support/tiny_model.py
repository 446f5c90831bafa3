"""A tiny random-weight Qwen2 model for the tests and bench/: it knows no language, but its real
byte-level BPE tokenizer and ChatML template run every engine path in seconds.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from socbench.files import atomic_dir

SEED = 1234
VOCAB_SIZE = 4000
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# Words for a deterministic corpus (tiny.json); survey-flavoured so the merges look like real text.
_WORDS = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))["words"].split()


def _corpus(rng: random.Random, lines: int = 6000) -> list[str]:
    """Sentences, numbers and ``{"answer": "<code>"}`` replies, seeded."""
    out = []
    for i in range(lines):
        words = rng.choices(_WORDS, k=rng.randint(4, 18))
        sentence = " ".join(words).capitalize() + rng.choice([".", "?", "!", ":"])
        code = str(rng.choice([rng.randint(-9, 12), rng.randint(0, 999)]))
        out.append(f"{sentence} {i} {code} {{\"answer\": \"{code}\"}}")
    return out


def _train_tokenizer(rng: random.Random):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=list(SPECIAL_TOKENS),
                                  show_progress=False,  # every byte (digits, " { } :) is a token:
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_corpus(rng), trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   chat_template=CHATML_TEMPLATE, model_max_length=2048)


def _build_model(vocab_size: int, eos_id: int, pad_id: int):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(SEED)
    config = Qwen2Config(vocab_size=vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2,  # head size 32: CPU attention: >= 32
                         max_position_embeddings=2048, tie_word_embeddings=True, eos_token_id=eos_id,
                         pad_token_id=pad_id, bos_token_id=None, torch_dtype="float32")
    return Qwen2ForCausalLM(config).eval()


def build_tiny_model(path: Path) -> Path:
    """Build (or reuse) the tiny model folder at ``path``; deterministic for a given stack."""
    path = Path(path)
    if (path / "config.json").is_file() and (path / "model.safetensors").is_file():
        return path
    with atomic_dir(path) as tmp:  # replaces an earlier build that did not finish
        tokenizer = _train_tokenizer(random.Random(SEED))
        model = _build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        record = {"built_from": "socbench tiny recipe", "seed": SEED}
        (tmp / "socbench_model.json").write_text(json.dumps(record))
    return path
