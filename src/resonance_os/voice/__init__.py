"""Write in a voice, checked from outside our HRV: the writers' corpora and the attribution check.

- ``corpora``: three public-domain writers' paragraphs, split into train and held-out by book
  (``load_writer(name, split)``).
- ``stylometry``: who wrote this, by character n-grams and logistic regression (``attribute(text)``).
- ``profile_match``: the HRV nearest-profile rule (``attribute_hrv(text)``, ``nearest_profile``).
- ``corpus_folder``: a profile from a folder of a writer's ``.txt`` files (``resonance profiles
  from-corpus``), and the corpus's paragraphs for a writer adapter.

The submodules are imported by their full names (scikit-learn loads only with ``stylometry``).
"""
