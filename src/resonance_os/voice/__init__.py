"""Write in a voice, checked from outside our HRV: the writers' corpora and the attribution check.

- ``corpora``: three public-domain writers' paragraphs, split into train and held-out by book
  (``load_writer(name, split)``).
- ``stylometry``: who wrote this, by character n-grams and logistic regression (``attribute(text)``).
- ``profile_match``: the HRV nearest-profile rule (``attribute_hrv(text)``, ``nearest_profile``).

The submodules are imported by their full names (scikit-learn loads only with ``stylometry``).
"""
