"""How long must a sample be to measure a voice? The minimum behind the profile-from-text warning.

A "voice" is the HRV of a 1,500-word stretch of consecutive sentences of the pydoc corpus (the
``quality.corpus`` paragraphs, 1,429 sentences); a sample is the first N words of that stretch (whole
sentences). For each N the script reports the median and the 90th percentile, over ``--trials``
random stretches, of the mean |gap| between the sample's HRV and the stretch's (8 dimensions): how far
a profile learnt from N words lies from the voice it was taken from. The writer counts a gap within
0.05 as on target. ``profiles.sample.MIN_SAMPLE_WORDS`` is read off this table.

    OMP_NUM_THREADS=1 python benchmarks/bench_sample_length.py --trials 100
"""

from __future__ import annotations

import argparse
import random
import statistics

from resonance_os.profiles.sample import MIN_SAMPLE_WORDS
from resonance_os.profiling.hrv_extractor import HRVExtractor
from resonance_os.quality.corpus import pydoc_paragraphs, sentences

VOICE_WORDS = 1500
LENGTHS = (5, 10, 25, 50, 100, 150, 200, 300, 500)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    extractor = HRVExtractor()
    corpus = sentences(pydoc_paragraphs("all"))
    rng = random.Random(args.seed)
    print(f"{len(corpus)} sentences, {args.trials} stretches of {VOICE_WORDS} words per length")
    print("| sample words | median mean abs gap | 90th percentile |")
    print("|---|---|---|")
    for length in LENGTHS:
        gaps = []
        for _ in range(args.trials):
            start = rng.randrange(len(corpus) - 400)
            stretch, words = [], 0
            for sentence in corpus[start:]:
                if words >= VOICE_WORDS:
                    break
                stretch.append(sentence)
                words += len(sentence.split())
            voice = extractor.extract(" ".join(stretch))
            sample, words = [], 0
            for sentence in stretch:
                if words >= length:
                    break
                sample.append(sentence)
                words += len(sentence.split())
            measured = extractor.extract(" ".join(sample))
            gaps.append(sum(abs(a - b) for a, b in zip(voice, measured)) / len(voice))
        marker = " (the warning's minimum)" if length == MIN_SAMPLE_WORDS else ""
        print(
            f"| {length}{marker} | {statistics.median(gaps):.3f} | {sorted(gaps)[int(0.9 * len(gaps))]:.3f} |"
        )


if __name__ == "__main__":
    main()
