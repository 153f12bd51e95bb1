"""Stage 4, pretrained RoPE LLMs: dequantising a GGUF file, loading a model from a folder or the hub,
the token sets it reads, and the capture of pre-softmax scores (on GPU or CPU).
"""
