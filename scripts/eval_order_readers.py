"""Can SmolLM2 be taught to read sentence order? Two trained readers against its own likelihood.

    .venv/bin/python scripts/eval_order_readers.py                     # both readers (about 1 hour, 2 cores)
    .venv/bin/python scripts/eval_order_readers.py --reader probe      # about 25 minutes
    .venv/bin/python scripts/eval_order_readers.py --train 40 --heldout 20 --epochs 1   # smoke run

Data: ``corpus.document_paragraphs`` with 3-8 sentences. Training: the ``train`` pydoc and fortune
paragraphs plus ``--docstrings`` docstring paragraphs, ``--train`` of them in a seeded order. Held out:
every ``heldout`` pydoc and fortune paragraph, against one ``damage.shuffle_sentences`` order each,
scored by paired accuracy ``P(score(real) > score(shuffled))`` (ties count 0), per source.

Readers (each text read as ``LM_START`` + its sentences, as ``LMCoherence`` reads it):

* ``likelihood``: the mean token log-likelihood (no training; the baseline).
* ``probe``: one frozen forward pass per order; features = for layers 6/12/18/24/30 the mean hidden
  state of the first sentence, of the rest, and the last token's state, plus three likelihood means;
  L2 logistic regression on feature differences (real minus shuffled, and the reverse), C = 0.003.
* ``finetune``: the top ``--layers`` decoder layers trained (AdamW, lr 2e-5, batches of 8 pairs) with a
  linear head on the last and mean final states, loss ``-log sigmoid(s(real) - s(shuffled))``, a
  different shuffle each epoch; the layers below are frozen and run once per order.
"""

from __future__ import annotations

import argparse
import copy
import random
import time

import numpy as np
import torch
import torch.nn.functional as F

from resonance_os.core.text import sentence_texts
from resonance_os.quality import corpus, damage, reference_lm
from resonance_os.quality.coherence import LM_START

PROBE_LAYERS = (6, 12, 18, 24, 30)
MAX_TOKENS = 384


def paragraphs(split: corpus.Split, docstrings: int = 0) -> list[tuple[str, str]]:
    """(source, paragraph) with 3-8 sentences; docstring paragraphs (training only) appended."""

    def keep(texts: list[str]) -> list[str]:
        return [p for p in texts if 3 <= len(sentence_texts(p)) <= 8]

    items = [("pydoc", p) for p in keep(corpus.document_paragraphs(corpus.pydoc_paragraphs(split)))]
    items += [("fortunes", p) for p in keep(corpus.document_paragraphs(corpus.fortune_entries(split)))]
    if docstrings:
        docs = keep(corpus.docstring_paragraphs())
        random.Random(0).shuffle(docs)
        items += [("docstrings", p) for p in docs[:docstrings]]
    return items


def orders(paragraph: str, index: int, shuffles: int) -> list[list[str]]:
    """The real order and up to ``shuffles`` different shuffled orders (seeded by ``index``)."""
    shuffled = [damage.shuffle_sentences(paragraph, seed=seed) for seed in (index, 7919 + index)[:shuffles]]
    return [sentence_texts(paragraph)] + [sentence_texts(s) for s in shuffled if s is not None]


class Reader:
    """SmolLM2 reading one order of sentences: token ids, sentence spans, hidden states."""

    def __init__(self) -> None:
        self.tokenizer, self.model = reference_lm.load_model(str(reference_lm.default_cache_dir()))
        self.start = self.tokenizer.convert_tokens_to_ids(LM_START)

    def encode(self, sentences: list[str]) -> tuple[torch.Tensor, list[tuple[int, int]]]:
        ids, spans = [self.start], []
        for sentence in sentences:
            piece = self.tokenizer(" " + sentence, add_special_tokens=False)["input_ids"]
            spans.append((len(ids), len(ids) + len(piece)))
            ids += piece
        spans = [(a, min(b, MAX_TOKENS)) for a, b in spans if a < MAX_TOKENS - 1]
        return torch.tensor([ids[:MAX_TOKENS]]), spans

    @torch.inference_mode()
    def features(self, sentences: list[str]) -> np.ndarray:
        """The probe's features of one order."""
        ids, spans = self.encode(sentences)
        out = self.model(input_ids=ids, output_hidden_states=True)
        logits = out.logits[0, :-1].float()
        logp = (logits.gather(-1, ids[0, 1:, None])[:, 0] - logits.logsumexp(-1)).numpy()
        parts = []
        for layer in PROBE_LAYERS:
            h = out.hidden_states[layer][0]
            means = torch.stack([h[a:b].mean(0) for a, b in spans])
            parts += [means[0].numpy(), means[1:].mean(0).numpy(), h[spans[-1][1] - 1].numpy()]
        per_sentence = [logp[a - 1 : b - 1].mean() for a, b in spans]
        parts.append(np.array([per_sentence[0], np.mean(per_sentence[1:]), logp.mean()]))
        return np.concatenate(parts)

    @torch.inference_mode()
    def states(self, sentences: list[str], layer: int) -> torch.Tensor:
        """Hidden states entering decoder layer ``layer`` (the frozen part of the fine-tuned reader)."""
        ids, _ = self.encode(sentences)
        return self.model.model(input_ids=ids, output_hidden_states=True).hidden_states[layer][0].clone()


def accuracy(margins: list[float], sources: list[str]) -> str:
    """Paired accuracy overall and per source, from each pair's score margin (real minus shuffled)."""
    m, s = np.array(margins), np.array(sources)
    per = "  ".join(
        f"{name} {np.mean(m[s == name] > 0):.3f} ({(s == name).sum()})" for name in sorted(set(sources))
    )
    return f"all {np.mean(m > 0):.3f} ({len(m)})  {per}"


def probe(reader: Reader, train: list, heldout: list) -> None:
    from sklearn.linear_model import LogisticRegression

    def diffs(items: list) -> tuple[np.ndarray, list[float], list[str]]:
        rows, likelihood, sources = [], [], []
        for i, (source, paragraph) in enumerate(items):
            found = orders(paragraph, i, 1)
            if len(found) < 2:
                continue
            real, shuffled = reader.features(found[0]), reader.features(found[1])
            rows.append(real - shuffled)
            likelihood.append(float(real[-1] - shuffled[-1]))
            sources.append(source)
        return np.array(rows), likelihood, sources

    x_train, _, _ = diffs(train)
    x_test, likelihood, sources = diffs(heldout)
    scale = np.abs(x_train).mean(0) + 1e-6
    x = np.concatenate([x_train, -x_train]) / scale
    y = np.concatenate([np.ones(len(x_train)), np.zeros(len(x_train))])
    model = LogisticRegression(C=0.003, fit_intercept=False, max_iter=5000).fit(x, y)
    print(f"likelihood alone   {accuracy(likelihood, sources)}")
    print(f"probe              {accuracy(list((x_test / scale) @ model.coef_[0]), sources)}")


def finetune(reader: Reader, train: list, heldout: list, layers: int, epochs: int) -> None:
    torch.manual_seed(0)
    first = len(reader.model.model.layers) - layers
    top = copy.deepcopy(reader.model.model)
    top.layers = torch.nn.ModuleList(list(top.layers)[first:])
    top.embed_tokens = None
    head = torch.nn.Linear(2 * reader.model.config.hidden_size, 1)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    optimizer = torch.optim.AdamW(
        [{"params": top.parameters(), "lr": 2e-5}, {"params": head.parameters(), "lr": 1e-3}],
        weight_decay=0.01,
    )
    cached = [[reader.states(o, first) for o in orders(p, i, 2)] for i, (_, p) in enumerate(train)]
    cached = [c for c in cached if len(c) >= 2]
    test = [(s, [reader.states(o, first) for o in orders(p, i, 1)]) for i, (s, p) in enumerate(heldout)]
    test = [(s, c) for s, c in test if len(c) == 2]

    def score(states: torch.Tensor) -> torch.Tensor:
        out = top(inputs_embeds=states[None]).last_hidden_state[0]
        return head(torch.cat([out[-1], out.mean(0)]))[0]

    rng, start = random.Random(0), time.perf_counter()
    for epoch in range(epochs):
        top.train()
        rng.shuffle(cached)
        losses = []
        for b in range(0, len(cached), 8):
            optimizer.zero_grad()
            for states in cached[b : b + 8]:
                shuffled = states[1 + epoch % (len(states) - 1)]
                loss = -F.logsigmoid(score(states[0]) - score(shuffled)) / len(cached[b : b + 8])
                loss.backward()
                losses.append(loss.item() * len(cached[b : b + 8]))
            torch.nn.utils.clip_grad_norm_([*top.parameters(), *head.parameters()], 1.0)
            optimizer.step()
        top.eval()
        with torch.inference_mode():
            margins = [float(score(real) - score(shuffled)) for _, (real, shuffled) in test]
        print(
            f"fine-tuned top {layers} layers, epoch {epoch + 1}: train loss {np.mean(losses):.3f}  "
            f"{accuracy(margins, [s for s, _ in test])}  ({time.perf_counter() - start:.0f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reader", choices=("probe", "finetune", "both"), default="both")
    parser.add_argument("--train", type=int, default=1825, help="training paragraphs (seeded sample)")
    parser.add_argument("--docstrings", type=int, default=900, help="docstring paragraphs added to the pool")
    parser.add_argument("--heldout", type=int, default=0, help="held-out paragraphs (0: all)")
    parser.add_argument(
        "--layers", type=int, default=6, help="top decoder layers the fine-tuned reader trains"
    )
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(2)
    train = paragraphs("train", args.docstrings)
    random.Random(1).shuffle(train)
    train = train[: args.train]
    heldout = paragraphs("heldout")
    heldout = heldout[: args.heldout] if args.heldout else heldout
    print(f"{len(train)} training paragraphs, {len(heldout)} held out")
    reader = Reader()
    if args.reader in ("probe", "both"):
        probe(reader, train, heldout)
    if args.reader in ("finetune", "both"):
        finetune(reader, train, heldout, args.layers, args.epochs)


if __name__ == "__main__":
    main()
