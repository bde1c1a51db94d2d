"""Stand-ins for the model-backed judges' models, built here without downloading weights: a
processor and a VLM that follow the transformers interface the VLM judge uses, and a tiny random
CLIP saved as a local folder (a helper module, as `training_helpers`: no test module imports
another)."""

import argparse
import json

import numpy as np
import pytest
import torch


class FakeProcessor:
    """Follows the transformers processor interface the VLM judge uses."""

    def __init__(self):
        self.tokenizer = argparse.Namespace(padding_side="right")
        self.seen = []

    def apply_chat_template(self, messages, add_generation_prompt, tokenize):
        assert add_generation_prompt and not tokenize
        return "USER: <image> " + messages[0]["content"][1]["text"] + " ASSISTANT:"

    def __call__(self, text, images, return_tensors, padding):
        self.seen.append((text, images))
        means = torch.tensor([float(np.asarray(im).mean()) for im in images])
        return {"input_ids": torch.zeros(len(images), 5, dtype=torch.long), "brightness": means}

    def batch_decode(self, ids, skip_special_tokens):
        return ["<think>is it bright?</think> Yes." if int(i[0]) == 1 else "no" for i in ids]


class FakeVLM:
    def __init__(self):
        self.calls = 0

    def to(self, device):
        return self

    def generate(self, input_ids, brightness, max_new_tokens, do_sample):
        self.calls += 1
        ans = (brightness > 127).long()[:, None]
        return torch.cat([input_ids, ans, ans], dim=1)


def tiny_clip(path):
    """A tiny random CLIP model and its processor saved under `path`/clip; skips without transformers."""
    transformers = pytest.importorskip("transformers")
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for ch in "abcdefghijklmnopqrstuvwxyz":
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    (path / "vocab.json").write_text(json.dumps(vocab))
    (path / "merges.txt").write_text("#version: 0.2\n")
    tok = transformers.CLIPTokenizer(str(path / "vocab.json"), str(path / "merges.txt"))
    ip = transformers.CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    cfg = transformers.CLIPConfig(
        text_config=dict(
            vocab_size=len(vocab),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=40,
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
        ),
        vision_config=dict(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=32,
            patch_size=8,
        ),
        projection_dim=8,
    )
    torch.manual_seed(0)
    out = path / "clip"
    transformers.CLIPModel(cfg).save_pretrained(out)
    transformers.CLIPProcessor(image_processor=ip, tokenizer=tok).save_pretrained(out)
    return out
