"""What an image in a chat message costs, in tokens, as its provider bills
it: the drop-ins charge it with the message that carries it (a turn's
``attached_tokens``), so the budget holds for the messages as sent.

- OpenAI's GPT-4o, GPT-4.1, GPT-4.5, GPT-5 and o1/o3: ``detail="low"``
  is the base; otherwise the image is fitted within 2048×2048, then
  scaled down so its short side is at most 768, and costs the base and
  a price for each 512-pixel tile: 85 and 170 (GPT-4o mini: 2,833 and
  5,667; GPT-5: 70 and 140; o1 and o3: 75 and 150).
- OpenAI's GPT-4.1 mini and nano, GPT-5 mini and nano and o4-mini: one
  token for each 32-pixel patch that covers the image, scaled down to at
  most 1,536 patches, times the model's multiplier (1.62, 2.46, 1.62,
  2.46, 1.72), rounded up. These are the published rules; some models
  are billed less than they say, never more.
- Anthropic's Claude: width × height / 750 after the long side is fitted
  within 1,568 pixels, at most 1,600.

An image's size is read from its bytes (PNG, JPEG, GIF, WebP, in a
``data:`` URL or base64 field); an image given by URL, whose size is not
known here, is charged the most one can cost under the rule. Any other
model's images need their count given (``image_tokens``).
"""

from __future__ import annotations

import base64
import binascii
import math
from typing import Any, Callable, Optional, Union

#: Tokens of an image part, given ``(part, where)``.
Pricer = Callable[[dict[str, Any], str], int]


def _tiles(size: Optional[tuple[int, int]], low: bool, base: int, tile: int) -> int:
    if low:
        return base
    if size is None:
        return base + tile * 8  # 768 × 2048: the most tiles an image is cut into
    w, h = float(size[0]), float(size[1])
    if max(w, h) > 2048:
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return base + tile * math.ceil(w / 512) * math.ceil(h / 512)


def _patches(size: Optional[tuple[int, int]], multiplier: float) -> int:
    if size is None:
        return math.ceil(1536 * multiplier)
    w, h = float(size[0]), float(size[1])
    if math.ceil(w / 32) * math.ceil(h / 32) > 1536:
        # Scaled to about 1,536 patches, then down to whole patches across
        # the side that fits the fewer.
        shrink = math.sqrt(1536 * 32 * 32 / (w * h))
        w, h = w * shrink, h * shrink
        shrink = min(math.floor(w / 32) / (w / 32), math.floor(h / 32) / (h / 32))
        w, h = w * shrink, h * shrink
    return math.ceil(min(math.ceil(w / 32) * math.ceil(h / 32), 1536) * multiplier)


def _pixels(size: Optional[tuple[int, int]]) -> int:
    if size is None:
        return 1600
    w, h = float(size[0]), float(size[1])
    if max(w, h) > 1568:
        w, h = w * 1568 / max(w, h), h * 1568 / max(w, h)
    return min(math.ceil(w * h / 750), 1600)


def _bytes(part: dict[str, Any]) -> Optional[bytes]:
    """The image's bytes, where the part holds them (base64)."""
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url
    given = part.get("source")
    source: dict[str, Any] = given if isinstance(given, dict) else {}
    data = None
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        data = url.split(",", 1)[1]
    elif source.get("type") == "base64":
        data = source.get("data")
    elif part.get("source_type") == "base64" or ("source_type" not in part and "url" not in part
                                                  and isinstance(part.get("data"), str)):
        data = part.get("data")
    elif isinstance(part.get("base64"), str):
        data = part["base64"]
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        return None


def size_of(data: bytes) -> Optional[tuple[int, int]]:
    """Width and height of a PNG, JPEG, GIF or WebP image, from its header."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data[:4] == b"GIF8" and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8 ":
            return int.from_bytes(data[26:28], "little") & 0x3FFF, int.from_bytes(data[28:30], "little") & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if chunk == b"VP8X":
            return int.from_bytes(data[24:27], "little") + 1, int.from_bytes(data[27:30], "little") + 1
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 <= len(data) and data[i] == 0xFF:
            marker = data[i + 1]
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                return int.from_bytes(data[i + 7:i + 9], "big"), int.from_bytes(data[i + 5:i + 7], "big")
            i += 2 + int.from_bytes(data[i + 2:i + 4], "big")
    return None


def is_image(part: Any) -> bool:
    """Whether a content part is an image (OpenAI's, Anthropic's or LangChain's)."""
    return isinstance(part, dict) and part.get("type") in ("image_url", "image", "input_image")


#: OpenAI's models billed by 32-pixel patches, with their multipliers.
_PATCHED = (("gpt-4.1-mini", 1.62), ("gpt-4.1-nano", 2.46), ("gpt-5-mini", 1.62), ("gpt-5-nano", 2.46),
            ("o4-mini", 1.72))
#: OpenAI's models billed by 512-pixel tiles: their base and tile prices.
_TILED = ((("gpt-4o-mini",), 2833, 5667), (("gpt-5-",), 70, 140), (("o1", "o3"), 75, 150),
          (("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-4-turbo", "chatgpt-4o"), 85, 170))


def _by_patches(multiplier: float) -> Pricer:
    return lambda part, where: _patches(_size(part), multiplier)


def _by_tiles(base: int, tile: int) -> Pricer:
    return lambda part, where: _tiles(_size(part), _low(part), base, tile)


def pricer(model: Optional[str], image_tokens: Union[None, int, Callable[[dict[str, Any]], int]]) -> Pricer:
    """The cost of an image part for ``model`` (OpenAI's rule without one:
    the default tokenizer is OpenAI's), or as ``image_tokens`` gives it."""
    if image_tokens is not None:
        def given(part: dict[str, Any], where: str) -> int:
            n = image_tokens(part) if callable(image_tokens) else image_tokens
            if type(n) is not int or not 0 <= n <= 0xFFFF_FFFF:
                raise TypeError(f"`image_tokens`: expected a whole number of tokens for `{where}`, got {n!r}")
            return n
        return given
    name = (model or "gpt-4o").strip().rsplit("/", 1)[-1].lower()
    if name.startswith("claude"):
        return lambda part, where: _pixels(_size(part))
    # A name and its dated snapshots ("gpt-5" is not "gpt-5.1").
    name += "-"
    for prefix, multiplier in _PATCHED:
        if name.startswith(prefix):
            return _by_patches(multiplier)
    if name.startswith(("o3-mini", "o1-mini")):
        def none(part: dict[str, Any], where: str) -> int:
            raise ValueError(f"`{where}`: {model!r} takes no images")
        return none
    for prefixes, base, tile in _TILED:
        if name.startswith(prefixes):
            return _by_tiles(base, tile)

    def unknown(part: dict[str, Any], where: str) -> int:
        raise TypeError(f"`{where}`: what an image costs {model!r} is not known to ctxpack (it knows OpenAI's "
                        "GPT-4o, GPT-4.1, GPT-5, o1, o3 and o4-mini and Anthropic's Claude): give it as "
                        "image_tokens= (a number of tokens, or a function of the image part)")
    return unknown


def _size(part: dict[str, Any]) -> Optional[tuple[int, int]]:
    data = _bytes(part)
    return size_of(data) if data else None


def _low(part: dict[str, Any]) -> bool:
    url = part.get("image_url")
    return isinstance(url, dict) and url.get("detail") == "low" or part.get("detail") == "low"


def as_openai(part: dict[str, Any]) -> dict[str, Any]:
    """An image part as OpenAI's ``image_url`` part (given so, unchanged)."""
    if part.get("type") == "image_url":
        return part
    given = part.get("source")
    source: dict[str, Any] = given if isinstance(given, dict) else {}
    data, mime = _bytes_field(part, source)
    if data is not None:
        url = f"data:{mime};base64,{data}"
    else:
        url = source.get("url") or part.get("url") or ""
    return {"type": "image_url", "image_url": {"url": url}}


def as_anthropic(part: dict[str, Any]) -> dict[str, Any]:
    """An image part as Anthropic's ``image`` block (given so, unchanged)."""
    if part.get("type") == "image" and isinstance(part.get("source"), dict):
        return part
    url = part.get("image_url")
    url = url.get("url") if isinstance(url, dict) else url if isinstance(url, str) else part.get("url")
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        head, encoded = url.split(",", 1)
        media = head[5:].split(";", 1)[0] or "image/png"
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": encoded}}
    data, mime = _bytes_field(part, {})
    if data is not None:
        return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}
    return {"type": "image", "source": {"type": "url", "url": url or ""}}


def _bytes_field(part: dict[str, Any], source: dict[str, Any]) -> tuple[Optional[str], str]:
    """A base64 image's data and media type, from Anthropic's ``source`` or
    LangChain's fields."""
    if source.get("type") == "base64" and isinstance(source.get("data"), str):
        return source["data"], str(source.get("media_type") or "image/png")
    data = part.get("data") if part.get("source_type") == "base64" or (
        "source_type" not in part and "url" not in part) else part.get("base64")
    data = data if isinstance(data, str) else part.get("base64")
    if isinstance(data, str):
        return data, str(part.get("mime_type") or part.get("mimeType") or "image/png")
    return None, "image/png"
