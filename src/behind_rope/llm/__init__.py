"""Stage 4, pretrained RoPE LLMs: dequantising a GGUF file, loading a model from a folder or the hub,
the token sets it reads, and the score run of any model, a twin's too, on one token set (on GPU or CPU;
the capture itself is behind_rope.capture).
"""
