"""Train the LM order reader that ``quality.coherence.LMCoherence`` ships: SmolLM2 + LoRA + a linear head.

    # here (CPU): the paragraphs, split into sentences, with one seeded shuffle each
    .venv/bin/python scripts/train_order_reader.py prepare --books build/order_corpus --out build/order_reader_data.jsonl.gz
    # on a GPU (about 3 minutes on one H100) or, slowly, on the CPU:
    python scripts/train_order_reader.py train --data build/order_reader_data.jsonl.gz --out OUTDIR

``prepare`` reads the book paragraphs of ``scripts/build_order_corpus.py`` (train: novels, children's
books, philosophy; held out: history, essays, a book that teaches a programming language) and the
``quality.corpus`` prose (pydoc and fortunes by their document split; docstring paragraphs, training
only), keeps 3-8 sentences, and writes one row per paragraph: split, domain, its sentences and one
different order (``damage.shuffle_sentences(p, seed=i)``).

``train``: the reader scores one order of sentences, read as ``LMCoherence`` reads it (``LM_START``,
then each sentence with a leading space), as ``head . [h_last ; mean_t h_t]`` over SmolLM2's final
(normalised) hidden states, with LoRA (rank ``--rank``, alpha ``2 * rank``) on every attention and MLP
projection of every layer. Loss: ``-log sigmoid(s(real) - s(shuffled))`` with a fresh random different
order of each training paragraph every epoch (pairwise ranking, as the fast model's order weights).
Held-out figures, P(s(real) > s(shuffled)) per domain against the base model's likelihood reading
(mean token log-likelihood) of the same pairs, are printed after training and never feed back into
it. Writes ``OUTDIR/order_reader.safetensors`` (LoRA A/B in float16 by module path, the head in float32,
settings in the metadata) and ``OUTDIR/heldout_scores.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import random
import time
from pathlib import Path

MAX_TOKENS = 320
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def prepare(books: Path, out: Path) -> None:
    from resonance_os.core.text import sentence_texts
    from resonance_os.quality import corpus, damage

    rows = []
    for split in ("train", "heldout"):
        items = [(r["domain"], r["text"]) for r in corpus.order_corpus(books, split)]
        items += [("pydoc", p) for p in corpus.document_paragraphs(corpus.pydoc_paragraphs(split))]
        items += [("fortunes", p) for p in corpus.document_paragraphs(corpus.fortune_entries(split))]
        if split == "train":
            items += [("docstrings", p) for p in corpus.docstring_paragraphs()]
        for i, (domain, text) in enumerate(items):
            sentences = sentence_texts(text)
            shuffled = damage.shuffle_sentences(text, seed=i)
            if not 3 <= len(sentences) <= 8 or shuffled is None:
                continue
            rows.append(
                {
                    "split": split,
                    "domain": domain,
                    "sentences": sentences,
                    "shuffled": sentence_texts(shuffled),
                }
            )
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    for split in ("train", "heldout"):
        print(split, sum(r["split"] == split for r in rows), "paragraphs")


class Scorer:
    """Token ids of an order and the reader's score of a batch of them."""

    def __init__(self, tokenizer, model, head, device) -> None:
        from resonance_os.quality.reference_lm import LM_START

        self.tokenizer, self.model, self.head, self.device = tokenizer, model, head, device
        self.start = tokenizer.convert_tokens_to_ids(LM_START)
        self._pieces: dict[str, list[int]] = {}

    def ids(self, sentences: list[str]) -> list[int]:
        out = [self.start]
        for s in sentences:
            piece = self._pieces.get(s)
            if piece is None:
                piece = self._pieces[s] = self.tokenizer(" " + s, add_special_tokens=False)["input_ids"]
            out += piece
        return out[:MAX_TOKENS]

    def batch(self, sequences: list[list[int]]):
        import torch

        width = max(map(len, sequences))
        ids = torch.zeros((len(sequences), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = torch.tensor(seq)
            mask[row, : len(seq)] = 1
        return ids.to(self.device), mask.to(self.device)

    def scores(self, sequences: list[list[int]], inner):
        """``head . [h_last ; mean h]`` of each sequence; ``inner`` is the decoder (LlamaModel)."""
        import torch

        ids, mask = self.batch(sequences)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.device.type == "cuda"):
            h = inner(input_ids=ids, attention_mask=mask).last_hidden_state
        h = h.float()
        lengths = mask.sum(1)
        last = h[torch.arange(len(sequences), device=h.device), lengths - 1]
        mean = (h * mask[..., None]).sum(1) / lengths[:, None]
        return self.head(torch.cat([last, mean], -1))[:, 0]

    def likelihood(self, sequences: list[list[int]], lm):
        """Mean token log-likelihood of each sequence under ``lm`` (the base reading)."""
        import torch

        ids, mask = self.batch(sequences)
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.device.type == "cuda"):
            logits = lm(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
        logp = logits.gather(-1, ids[:, 1:, None])[..., 0] - logits.logsumexp(-1)
        m = mask[:, 1:].float()
        return (logp * m).sum(1) / m.sum(1)


def different_order(n: int, rng: random.Random) -> list[int]:
    order = list(range(n))
    while order == list(range(n)):
        rng.shuffle(order)
    return order


def train(
    data: Path, out: Path, rank: int, epochs: int, batch: int, lr: float, limit: int, budget: float
) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import save_file

    from resonance_os.quality import reference_lm

    started = time.perf_counter()
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    tokenizer, lm = reference_lm.load_model(str(reference_lm.default_cache_dir()))
    lm = lm.to(device)
    lm.requires_grad_(False)
    with gzip.open(data, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    train_rows = [r for r in rows if r["split"] == "train"]
    heldout = [r for r in rows if r["split"] == "heldout"]
    rng = random.Random(0)
    rng.shuffle(train_rows)
    if limit:
        train_rows, heldout = train_rows[:limit], heldout[: max(8, limit // 4)]
    print(f"{len(train_rows)} training paragraphs, {len(heldout)} held out, device {device}", flush=True)
    config = LoraConfig(
        r=rank, lora_alpha=2 * rank, lora_dropout=0.0, target_modules=list(TARGETS), bias="none"
    )
    model = get_peft_model(lm, config)
    inner = model.get_base_model().model
    hidden = lm.config.hidden_size
    head = torch.nn.Linear(2 * hidden, 1).to(device)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    scorer = Scorer(tokenizer, model, head, device)
    lora_params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        [{"params": lora_params, "lr": lr}, {"params": head.parameters(), "lr": 1e-3}], weight_decay=0.0
    )
    steps = epochs * math.ceil(len(train_rows) / batch)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda k: min(1.0, (k + 1) / 50) * max(0.05, 1 - k / steps)
    )
    step = 0
    for epoch in range(epochs):
        if time.perf_counter() - started > budget:
            break
        rng.shuffle(train_rows)
        model.train()
        losses, wins = [], []
        for b in range(0, len(train_rows), batch):
            if time.perf_counter() - started > budget:
                print(f"time budget reached at step {step} of {steps}", flush=True)
                break
            chunk = train_rows[b : b + batch]
            real = [scorer.ids(r["sentences"]) for r in chunk]
            other = [
                scorer.ids([r["sentences"][i] for i in different_order(len(r["sentences"]), rng)])
                for r in chunk
            ]
            s = scorer.scores(real + other, inner)
            margin = s[: len(chunk)] - s[len(chunk) :]
            loss = -torch.nn.functional.logsigmoid(margin).mean()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_([*lora_params, *head.parameters()], 1.0)
            optimizer.step()
            schedule.step()
            step += 1
            losses.append(loss.item())
            wins.append(float((margin > 0).float().mean()))
            if step % 200 == 0:
                print(
                    f"epoch {epoch + 1} step {step}/{steps}: loss {sum(losses[-200:]) / len(losses[-200:]):.3f} "
                    f"train pairs won {sum(wins[-200:]) / len(wins[-200:]):.3f} ({time.perf_counter() - started:.0f} s)",
                    flush=True,
                )
    model.eval()
    results = []
    with torch.inference_mode():
        for b in range(0, len(heldout), 32):
            chunk = heldout[b : b + 32]
            seqs = [scorer.ids(r["sentences"]) for r in chunk] + [scorer.ids(r["shuffled"]) for r in chunk]
            s = scorer.scores(seqs, inner).tolist()
            with model.disable_adapter():
                ll = scorer.likelihood(seqs, model.get_base_model()).tolist()
            n = len(chunk)
            for k, r in enumerate(chunk):
                results.append(
                    {
                        "domain": r["domain"],
                        "reader": [s[k], s[n + k]],
                        "likelihood": [ll[k], ll[n + k]],
                        "sentences": r["sentences"] if b == 0 else None,
                    }
                )
    domains = sorted({r["domain"] for r in results})
    for domain in [*domains, "all"]:
        rs = [r for r in results if domain in ("all", r["domain"])]
        reader = sum(r["reader"][0] > r["reader"][1] for r in rs) / len(rs)
        base = sum(r["likelihood"][0] > r["likelihood"][1] for r in rs) / len(rs)
        print(
            f"held-out {domain:11s} n={len(rs):5d}  base likelihood {base:.3f}  trained reader {reader:.3f}"
        )
    out.mkdir(parents=True, exist_ok=True)
    tensors = {}
    for name, param in model.named_parameters():
        if "lora_" in name:
            path = name.removeprefix("base_model.model.").replace(".default", "").removesuffix(".weight")
            tensors[path] = param.detach().to("cpu", torch.float16).contiguous()
    tensors["head.weight"] = head.weight.detach().cpu().float().contiguous()
    tensors["head.bias"] = head.bias.detach().cpu().float().contiguous()
    meta = {
        "rank": str(rank),
        "alpha": str(2 * rank),
        "base": reference_lm.GGUF_NAME,
        "pooling": "last+mean",
        "max_tokens": str(MAX_TOKENS),
    }
    save_file(tensors, str(out / "order_reader.safetensors"), metadata=meta)
    (out / "heldout_scores.json").write_text(json.dumps(results))
    print(
        f"wrote {out}/order_reader.safetensors ({len(tensors)} tensors); {time.perf_counter() - started:.0f} s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--books", type=Path, default=Path("build/order_corpus"))
    p.add_argument("--out", type=Path, default=Path("build/order_reader_data.jsonl.gz"))
    t = sub.add_parser("train")
    t.add_argument("--data", type=Path, default=Path("build/order_reader_data.jsonl.gz"))
    t.add_argument("--out", type=Path, required=True)
    t.add_argument("--rank", type=int, default=8)
    t.add_argument("--epochs", type=int, default=2)
    t.add_argument("--batch", type=int, default=32, help="paragraphs per step (each with one shuffle)")
    t.add_argument("--lr", type=float, default=2e-4)
    t.add_argument("--limit", type=int, default=0, help="first N training paragraphs only (smoke runs)")
    t.add_argument("--budget", type=float, default=1e9, help="seconds after which training stops")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(args.books, args.out)
    else:
        train(args.data, args.out, args.rank, args.epochs, args.batch, args.lr, args.limit, args.budget)


if __name__ == "__main__":
    main()
