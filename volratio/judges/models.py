"""The model judges: CLIP zero-shot and a vision-language model asked a yes/no question.

- `CLIPJudge` — CLIP zero-shot (Radford et al. 2021): the label's prompt against distractor prompts
  (`clip_prompts`).
- `VLMJudge` — a vision-language model asked a yes/no question (`vlm_messages`, `parse_answer`;
  the paper used Qwen/Qwen3-VL-4B-Thinking); any local `image-text-to-text` model works.

Both need `transformers` (the `judges` extra; imported only when used) and load weights **only**
from a local folder or the Hugging Face cache (`local_files_only=True`). When the weights are absent
they raise `JudgeWeightsMissing`, which says how to provide them; they never fall back to another
judge. Both are batched and cache verdicts by image hash (`volratio.judges.base.image_hash`).

Chapter: "EMC2-Bench" (book/emc2.md).
"""

from __future__ import annotations

import re

import numpy as np
import torch
from PIL import Image

from ..util.device import resolve_device
from .base import Judge, JudgeText, JudgeWeightsMissing, image_hash, to_uint8

_HOW_TO = (
    "volratio never downloads judge weights on its own and never falls back to another judge. To "
    "provide them: on a machine with network run `hf download {model}` (or "
    "`huggingface-cli download {model}`) and copy the Hugging Face cache (~/.cache/huggingface) here "
    "or point HF_HOME at it; or save the model to a folder and pass that folder as the model "
    "(`--judge-model PATH`, or {cls}(model='PATH')). Without weights, use the offline judge "
    "(`--judge calibrated`)."
)


def _transformers():
    try:
        import transformers  # optional: the [judges] extra; heavy, and only the CLIP and VLM judges need it
    except ImportError as e:
        raise JudgeWeightsMissing(
            "the CLIP and VLM judges need the `transformers` package: pip install 'volratio[judges]'"
        ) from e
    return transformers


def _load(auto_model: str, model: str, cls_name: str, cache_dir=None):
    tf = _transformers()
    try:
        m = getattr(tf, auto_model).from_pretrained(model, local_files_only=True, cache_dir=cache_dir)
        p = tf.AutoProcessor.from_pretrained(model, local_files_only=True, cache_dir=cache_dir)
    except (OSError, ValueError) as e:
        raise JudgeWeightsMissing(
            f"{cls_name}: no local weights for {model!r} ({type(e).__name__}: {str(e).splitlines()[0]}). "
            + _HOW_TO.format(model=model, cls=cls_name)
        ) from e
    m.eval()
    return m, p


def _pil_batch(images_u8: np.ndarray, size: int | None):
    """PIL images from a uint8 batch `(B, H, W, 3)`, resized to size×size (bicubic) when given."""
    out = []
    for a in images_u8:
        im = Image.fromarray(a)
        if size and im.size != (size, size):
            im = im.resize((size, size), Image.Resampling.BICUBIC)
        out.append(im)
    return out


class _CachedModelJudge(Judge):
    """Batching and the per-image-hash cache shared by the model judges."""

    batch_size = 16

    def __init__(self):
        self._cache: dict[tuple[str, str], tuple[bool, float]] = {}
        self.cache_hits = 0

    def _judge(self, images, label):
        u8 = to_uint8(images)
        keys = [(image_hash(a), label) for a in u8]
        todo = [i for i, k in enumerate(keys) if k not in self._cache]
        self.cache_hits += len(keys) - len(todo)
        uniq, seen = [], set()
        for i in todo:
            if keys[i] not in seen:
                seen.add(keys[i])
                uniq.append(i)
        for a in range(0, len(uniq), self.batch_size):
            part = uniq[a : a + self.batch_size]
            v, s = self._run(u8[part], label)
            for i, vi, si in zip(part, v, s):
                self._cache[keys[i]] = (bool(vi), float(si))
        got = [self._cache[k] for k in keys]
        return [g[0] for g in got], [g[1] for g in got]

    def _run(self, images_u8: np.ndarray, label: str):  # pragma: no cover - abstract
        raise NotImplementedError


DEFAULT_DISTRACTORS = ("abstract pattern", "noise", "animal", "face", "landscape", "fruit", "insect", "building")


def clip_prompts(label: str, distractors=DEFAULT_DISTRACTORS, template: str = "a picture of a {}") -> list[str]:
    """The zero-shot prompts: the label's first, then one per distractor that is not the label."""
    return [template.format(label)] + [template.format(d) for d in distractors if d != label]


class CLIPJudge(_CachedModelJudge):
    """CLIP zero-shot: kept ⇔ the label's prompt has the highest probability among the prompts
    (or p(label) ≥ `threshold` when one is given). Score: p(label)."""

    name = "clip"
    texts = {"clip": JudgeText("CLIP judge")}

    def __init__(
        self,
        model: str = "openai/clip-vit-base-patch32",
        distractors=DEFAULT_DISTRACTORS,
        template: str = "a picture of a {}",
        threshold: float | None = None,
        image_size: int = 224,
        device: str = "auto",
        batch_size: int = 32,
        cache_dir=None,
        model_obj=None,
        processor_obj=None,
    ):
        super().__init__()

        self.model_id, self.distractors, self.template = model, tuple(distractors), template
        self.threshold, self.image_size, self.batch_size = threshold, image_size, batch_size
        self.device = resolve_device(device)
        if model_obj is None:
            model_obj, processor_obj = _load("AutoModel", model, "CLIPJudge", cache_dir)
        self.model, self.processor = model_obj.to(self.device), processor_obj

    def settings(self) -> dict:
        return {
            "model": self.model_id,
            "distractors": list(self.distractors),
            "template": self.template,
            "threshold": self.threshold,
            "image_size": self.image_size,
        }

    @torch.no_grad()
    def _run(self, images_u8, label):
        prompts = clip_prompts(label, self.distractors, self.template)
        inp = self.processor(
            text=prompts, images=_pil_batch(images_u8, self.image_size), return_tensors="pt", padding=True
        )
        inp = {k: v.to(self.device) for k, v in inp.items()}
        p = self.model(**inp).logits_per_image.softmax(dim=-1).cpu().double()  # (B, n_prompts)
        s = p[:, 0].numpy()
        v = s >= self.threshold if self.threshold is not None else (p.argmax(dim=-1) == 0).numpy()
        return v, s


VLM_PROMPT = "Is this image a picture of a {label}? Answer with one word: yes or no."


def vlm_messages(label: str, prompt: str = VLM_PROMPT) -> list[dict]:
    """The chat the VLM sees for one image: the image, then the question."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt.format(label=label)}]}]


_ANSWER = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_answer(text: str) -> bool | None:
    """Yes → True, no → False, anything else → None. A thinking model's reasoning (up to the last
    `</think>`) is ignored; an unfinished `<think>` block gives None. The first yes/no word counts."""
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    elif "<think>" in text:
        return None
    m = _ANSWER.search(text)
    return None if m is None else m.group(1).lower() == "yes"


class VLMJudge(_CachedModelJudge):
    """A vision-language model answers `prompt` with yes/no; kept ⇔ yes. Score: 1 (yes), 0 (no),
    NaN (no parsable answer — counted as not kept, and counted in `n_unparsed`)."""

    name = "vlm"
    texts = {"vlm": JudgeText("VLM judge")}

    def __init__(
        self,
        model: str = "Qwen/Qwen3-VL-4B-Thinking",
        prompt: str = VLM_PROMPT,
        max_new_tokens: int = 1024,
        image_size: int = 224,
        device: str = "auto",
        batch_size: int = 8,
        cache_dir=None,
        model_obj=None,
        processor_obj=None,
    ):
        super().__init__()

        self.model_id, self.prompt, self.max_new_tokens = model, prompt, int(max_new_tokens)
        self.image_size, self.batch_size = image_size, batch_size
        self.device = resolve_device(device)
        if model_obj is None:
            model_obj, processor_obj = _load("AutoModelForImageTextToText", model, "VLMJudge", cache_dir)
        self.model, self.processor = model_obj.to(self.device), processor_obj
        tok = getattr(self.processor, "tokenizer", None)
        if tok is not None:
            tok.padding_side = "left"  # batched generation continues every prompt at the same position
        self.n_unparsed = 0

    def settings(self) -> dict:
        return {
            "model": self.model_id,
            "prompt": self.prompt,
            "max_new_tokens": self.max_new_tokens,
            "image_size": self.image_size,
            "decoding": "greedy",
        }

    @torch.no_grad()
    def _run(self, images_u8, label):
        chat = self.processor.apply_chat_template(
            vlm_messages(label, self.prompt), add_generation_prompt=True, tokenize=False
        )
        ims = _pil_batch(images_u8, self.image_size)
        inp = self.processor(text=[chat] * len(ims), images=ims, return_tensors="pt", padding=True)
        inp = {k: v.to(self.device) for k, v in inp.items()}
        out = self.model.generate(**inp, max_new_tokens=self.max_new_tokens, do_sample=False)
        new = out[:, inp["input_ids"].shape[1] :]
        texts = self.processor.batch_decode(new, skip_special_tokens=False)
        ans = [parse_answer(t) for t in texts]
        self.n_unparsed += sum(a is None for a in ans)
        return [a is True for a in ans], [np.nan if a is None else float(a) for a in ans]
