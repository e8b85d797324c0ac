"""SpecScope's engine: speculative decoding over llama.cpp's low-level API.

Nothing in this package imports Qt; it is usable and testable headless.
"""
