"""Write in a voice, checked from outside our HRV: the writers' corpora and the attribution check.

``corpora``: three public-domain writers' paragraphs, split into train and held-out by book.
"""
