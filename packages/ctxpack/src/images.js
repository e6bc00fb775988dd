// What an image in a chat message costs, in tokens, as its provider bills
// it: chat.js charges it with the message that carries it (a turn's
// `attachedTokens`), so the budget holds for the messages as sent.
//
// - OpenAI's GPT-4o, GPT-4.1, GPT-4.5, GPT-5 and o1/o3: `detail: 'low'`
//   is the base; otherwise the image is fitted within 2048×2048, then
//   scaled down so its short side is at most 768, and costs the base and
//   a price for each 512-pixel tile: 85 and 170 (GPT-4o mini: 2,833 and
//   5,667; GPT-5: 70 and 140; o1 and o3: 75 and 150).
// - OpenAI's GPT-4.1 mini and nano, GPT-5 mini and nano and o4-mini: one
//   token for each 32-pixel patch that covers the image, scaled down to
//   at most 1,536 patches, times the model's multiplier (1.62, 2.46,
//   1.62, 2.46, 1.72), rounded up. These are the published rules; some
//   models are billed less than they say, never more.
// - Anthropic's Claude: width × height / 750 after the long side is fitted
//   within 1,568 pixels, at most 1,600.
//
// An image's size is read from its bytes (PNG, JPEG, GIF, WebP, in a
// `data:` URL or base64 field); an image given by URL, whose size is not
// known here, is charged the most one can cost under the rule. Any other
// model's images need their count given (`imageTokens`).

function tiles(size, low, base, tile) {
  if (low) return base;
  if (size === null) return base + tile * 8; // 768 × 2048: the most tiles an image is cut into
  let [w, h] = size;
  if (Math.max(w, h) > 2048) [w, h] = [w * 2048 / Math.max(w, h), h * 2048 / Math.max(w, h)];
  if (Math.min(w, h) > 768) [w, h] = [w * 768 / Math.min(w, h), h * 768 / Math.min(w, h)];
  return base + tile * Math.ceil(w / 512) * Math.ceil(h / 512);
}

function patches(size, multiplier) {
  if (size === null) return Math.ceil(1536 * multiplier);
  let [w, h] = size;
  if (Math.ceil(w / 32) * Math.ceil(h / 32) > 1536) {
    // Scaled to about 1,536 patches, then down to whole patches across
    // the side that fits the fewer.
    let shrink = Math.sqrt(1536 * 32 * 32 / (w * h));
    [w, h] = [w * shrink, h * shrink];
    shrink = Math.min(Math.floor(w / 32) / (w / 32), Math.floor(h / 32) / (h / 32));
    [w, h] = [w * shrink, h * shrink];
  }
  return Math.ceil(Math.min(Math.ceil(w / 32) * Math.ceil(h / 32), 1536) * multiplier);
}

// OpenAI's models billed by 32-pixel patches, with their multipliers.
const PATCHED = [['gpt-4.1-mini', 1.62], ['gpt-4.1-nano', 2.46], ['gpt-5-mini', 1.62], ['gpt-5-nano', 2.46], ['o4-mini', 1.72]];
// OpenAI's models billed by 512-pixel tiles: their base and tile prices.
const TILED = [
  [['gpt-4o-mini'], 2833, 5667], [['gpt-5-'], 70, 140], [['o1', 'o3'], 75, 150],
  [['gpt-4o', 'gpt-4.1', 'gpt-4.5', 'gpt-4-turbo', 'chatgpt-4o'], 85, 170],
];

function pixels(size) {
  if (size === null) return 1600;
  let [w, h] = size;
  if (Math.max(w, h) > 1568) [w, h] = [w * 1568 / Math.max(w, h), h * 1568 / Math.max(w, h)];
  return Math.min(Math.ceil(w * h / 750), 1600);
}

/** A base64 image's data and media type, from Anthropic's `source`, a
 * `data:` URL or LangChain's fields; null for an image by URL. */
function base64Of(part) {
  const url = typeof part.image_url === 'string' ? part.image_url : part.image_url?.url;
  if (typeof url === 'string' && url.startsWith('data:') && url.includes(',')) {
    const [head, data] = [url.slice(5, url.indexOf(',')), url.slice(url.indexOf(',') + 1)];
    return [data, head.split(';')[0] || 'image/png'];
  }
  const source = part.source !== null && typeof part.source === 'object' ? part.source : {};
  if (source.type === 'base64' && typeof source.data === 'string') return [source.data, source.media_type ?? 'image/png'];
  // LangChain's: `source_type: 'base64'` and `data` (v0), `base64` (v1,
  // Python) or `data` with no URL (v1, JS).
  const data = part.source_type === 'base64' || (part.source_type === undefined && part.url === undefined)
    ? part.data ?? part.base64 : part.base64;
  if (typeof data === 'string') return [data, part.mime_type ?? part.mimeType ?? 'image/png'];
  return null;
}

/** Width and height of a PNG, JPEG, GIF or WebP image, from its header; null if none. */
export function sizeOf(bytes) {
  const at = (i, n, big) => {
    let v = 0;
    for (let k = 0; k < n; k += 1) v += bytes[big ? i + k : i + n - 1 - k] * 256 ** (n - 1 - k);
    return v;
  };
  const is = (i, text) => [...text].every((c, k) => bytes[i + k] === c.charCodeAt(0));
  if (bytes.length >= 24 && bytes[0] === 0x89 && is(1, 'PNG\r\n\x1a\n')) return [at(16, 4, true), at(20, 4, true)];
  if (bytes.length >= 10 && is(0, 'GIF8')) return [at(6, 2, false), at(8, 2, false)];
  if (bytes.length >= 30 && is(0, 'RIFF') && is(8, 'WEBP')) {
    if (is(12, 'VP8 ')) return [at(26, 2, false) & 0x3fff, at(28, 2, false) & 0x3fff];
    if (is(12, 'VP8L')) {
      const bits = at(21, 4, false);
      return [(bits & 0x3fff) + 1, Math.floor(bits / 2 ** 14) % 2 ** 14 + 1];
    }
    if (is(12, 'VP8X')) return [at(24, 3, false) + 1, at(27, 3, false) + 1];
  }
  if (bytes[0] === 0xff && bytes[1] === 0xd8) {
    const sof = new Set([0xc0, 0xc1, 0xc2, 0xc3, 0xc5, 0xc6, 0xc7, 0xc9, 0xca, 0xcb, 0xcd, 0xce, 0xcf]);
    let i = 2;
    while (i + 9 <= bytes.length && bytes[i] === 0xff) {
      if (sof.has(bytes[i + 1])) return [at(i + 7, 2, true), at(i + 5, 2, true)];
      i += 2 + at(i + 2, 2, true);
    }
  }
  return null;
}

function sizeOfPart(part) {
  const found = base64Of(part);
  if (found === null) return null;
  let binary;
  try {
    binary = atob(found[0].replace(/\s/g, ''));
  } catch {
    return null;
  }
  return sizeOf(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
}

const lowDetail = (part) => part.image_url?.detail === 'low' || part.detail === 'low';

/** Whether a content part is an image (OpenAI's, Anthropic's or LangChain's). */
export const isImage = (part) => part !== null && typeof part === 'object'
  && ['image_url', 'image', 'input_image'].includes(part.type);

/**
 * The cost of an image part (given `(part, where)`) for `model` — OpenAI's
 * rule without one, the default tokenizer being OpenAI's — or as
 * `imageTokens` gives it (a number, or a function of the part).
 */
export function pricer(model, imageTokens, refuse) {
  if (imageTokens !== undefined && imageTokens !== null) {
    return (part, where) => {
      const n = typeof imageTokens === 'function' ? imageTokens(part) : imageTokens;
      if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) {
        throw refuse('options.imageTokens', `expected a whole number of tokens for \`${where}\`, got ${JSON.stringify(n)}`);
      }
      return n;
    };
  }
  // A name and its dated snapshots ('gpt-5' is not 'gpt-5.1').
  const name = `${String(model ?? 'gpt-4o').trim().split('/').pop().toLowerCase()}-`;
  const starts = (prefixes) => prefixes.some((p) => name.startsWith(p));
  if (starts(['claude'])) return (part) => pixels(sizeOfPart(part));
  const patched = PATCHED.find(([prefix]) => name.startsWith(prefix));
  if (patched) return (part) => patches(sizeOfPart(part), patched[1]);
  if (starts(['o1-mini', 'o3-mini'])) {
    return (part, where) => { throw refuse(where, `'${model}' takes no images`); };
  }
  const tiled = TILED.find(([prefixes]) => starts(prefixes));
  if (tiled) return (part) => tiles(sizeOfPart(part), lowDetail(part), tiled[1], tiled[2]);
  return (part, where) => {
    throw refuse(where, `what an image costs '${model}' is not known to ctxpack (it knows OpenAI's GPT-4o, GPT-4.1, GPT-5, o1, o3 and o4-mini and Anthropic's Claude): give it as options.imageTokens (a number of tokens, or a function of the image part)`);
  };
}

/** An image part as OpenAI's `image_url` part (given so, unchanged). */
export function asOpenAI(part) {
  if (part.type === 'image_url') return part;
  const found = base64Of(part);
  const url = found !== null ? `data:${found[1]};base64,${found[0]}` : part.source?.url ?? part.url ?? '';
  return { type: 'image_url', image_url: { url } };
}

/** An image part as Anthropic's `image` block (given so, unchanged). */
export function asAnthropic(part) {
  if (part.type === 'image' && part.source !== null && typeof part.source === 'object') return part;
  const found = base64Of(part);
  if (found !== null) return { type: 'image', source: { type: 'base64', media_type: found[1], data: found[0] } };
  const url = typeof part.image_url === 'string' ? part.image_url : part.image_url?.url ?? part.url ?? '';
  return { type: 'image', source: { type: 'url', url } };
}
