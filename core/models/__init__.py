"""GGUF files, llama.cpp's handles and what a model file says (lowest layer)."""
