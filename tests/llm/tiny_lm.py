"""A tiny seeded Llama-style model and a word-level tokenizer with a chat template, built offline."""

from __future__ import annotations

import torch

WORDS = (
    "the a cat dog bird sat ran flew on under over mat tree roof and then . , ! ? is was big small red "
    "blue green one two three four five six seven eight nine zero user assistant system hello world"
).split()
HEAD_SCALE = 10.0
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> {% endfor %}"
    "{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"
)


def make_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<s>", "<|im_start|>", "<|im_end|>"]
    vocab = {tok: i for i, tok in enumerate(specials + WORDS)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="<|im_end|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def make_model(vocab_size: int, seed: int = 0, context: int = 64, tied: bool = False):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=context,
        tie_word_embeddings=tied,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=4,
    )
    model = LlamaForCausalLM(config)
    # Random init at std 0.02 gives near-uniform next-token distributions; sharpen the head a little
    # so samples have structure (and top-p has something to cut).
    if not tied:
        with torch.no_grad():
            model.get_output_embeddings().weight.mul_(HEAD_SCALE)
    return model.eval()


def save_tiny_model(folder, context: int = 64):
    """The tiny model and its tokenizer saved as a Hugging Face folder (what a model path names)."""
    tok = make_tokenizer()
    make_model(len(tok), seed=0, context=context).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def one_step_lora(tokenizer, folder, context: int = 128, seed: int = 0):
    """An ``LMPolicy`` with a LoRA adapter on ``make_model`` after one Adam step (so B != 0: a fresh
    adapter is the identity), saved to ``folder``; returns the policy."""
    from resonance_os.llm.policy import LMPolicy, PolicyConfig

    policy = LMPolicy(
        tokenizer,
        make_model(len(tokenizer), seed=seed, context=context),
        PolicyConfig(lora_rank=4, lora_alpha=8),
    )
    ids = torch.tensor([tokenizer("the cat sat on the mat and then the dog ran")["input_ids"]])
    optimizer = torch.optim.Adam(policy.trainable_parameters(), lr=0.05)
    loss = -policy.token_logprobs(ids, torch.ones_like(ids), torch.ones(1, ids.shape[1] - 1)).sum()
    loss.backward()
    optimizer.step()
    policy.save(folder)
    return policy
