//! What an image in a chat message costs, as its provider bills it (the
//! model profile's [`ImageRule`]), and the image's size, read from its
//! bytes where the message carries them.

use crate::types::{ImageRule, ImageTiles};

/// An image in a message: its size where its bytes are inline, and
/// whether it asks for low detail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Image {
    /// Width and height in pixels; none for an image given by URL or in
    /// a format whose header is not read.
    pub size: Option<(u32, u32)>,
    /// OpenAI's `detail: "low"`.
    pub low: bool,
}

impl Image {
    /// An image whose bytes are `base64` (standard alphabet, padding
    /// optional; a `data:` URL's part after the comma).
    pub(crate) fn inline(base64: &str, low: bool) -> Image {
        Image {
            size: decode(base64).as_deref().and_then(size_of),
            low,
        }
    }

    /// An image given by URL (or a `data:` URL, read as `inline`).
    pub(crate) fn url(url: &str, low: bool) -> Image {
        match url.strip_prefix("data:").and_then(|u| u.split_once(',')) {
            Some((_, data)) => Image::inline(data, low),
            None => Image { size: None, low },
        }
    }
}

/// What `image` costs under `rule`; none where the rule takes no images.
/// An image whose size is not known costs the most the rule lets any
/// cost.
pub(crate) fn price(rule: &ImageRule, image: Image) -> Option<u32> {
    Some(match rule {
        ImageRule::Tiles(t) => tiles(*t, image),
        ImageRule::Patches(m) => patches(*m, image.size),
        ImageRule::Pixels => pixels(image.size),
        ImageRule::GeminiTiles => gemini(image.size),
        ImageRule::None => return None,
    })
}

fn tiles(t: ImageTiles, image: Image) -> u32 {
    if image.low {
        return t.base;
    }
    let Some((w, h)) = image.size else {
        // 768 × 2048: the most tiles an image is cut into.
        return t.base.saturating_add(t.tile.saturating_mul(8));
    };
    let (mut w, mut h) = (f64::from(w), f64::from(h));
    if w.max(h) > 2048.0 {
        let k = 2048.0 / w.max(h);
        (w, h) = (w * k, h * k);
    }
    if w.min(h) > 768.0 {
        let k = 768.0 / w.min(h);
        (w, h) = (w * k, h * k);
    }
    let n = (w / 512.0).ceil() * (h / 512.0).ceil();
    t.base.saturating_add(t.tile.saturating_mul(n as u32))
}

fn patches(multiplier: f64, size: Option<(u32, u32)>) -> u32 {
    const MOST: f64 = 1536.0;
    let multiplier = if multiplier.is_finite() && multiplier > 0.0 {
        multiplier
    } else {
        1.0
    };
    let Some((w, h)) = size else {
        return (MOST * multiplier).ceil() as u32;
    };
    let (mut w, mut h) = (f64::from(w), f64::from(h));
    if (w / 32.0).ceil() * (h / 32.0).ceil() > MOST {
        // Scaled to about 1,536 patches, then down to whole patches
        // across the side that fits the fewer.
        let shrink = (MOST * 32.0 * 32.0 / (w * h)).sqrt();
        (w, h) = (w * shrink, h * shrink);
        let shrink = ((w / 32.0).floor() / (w / 32.0)).min((h / 32.0).floor() / (h / 32.0));
        (w, h) = (w * shrink, h * shrink);
    }
    let n = ((w / 32.0).ceil() * (h / 32.0).ceil()).min(MOST);
    (n * multiplier).ceil() as u32
}

fn pixels(size: Option<(u32, u32)>) -> u32 {
    let Some((w, h)) = size else { return 1600 };
    let (mut w, mut h) = (f64::from(w), f64::from(h));
    if w.max(h) > 1568.0 {
        let k = 1568.0 / w.max(h);
        (w, h) = (w * k, h * k);
    }
    ((w * h / 750.0).ceil() as u32).min(1600)
}

fn gemini(size: Option<(u32, u32)>) -> u32 {
    const EACH: u32 = 258;
    let Some((w, h)) = size else {
        // The largest image Gemini takes is 3072 pixels a side: 16 tiles.
        return EACH * 16;
    };
    if w <= 384 && h <= 384 {
        return EACH;
    }
    let n = w.div_ceil(768).max(1) * h.div_ceil(768).max(1);
    EACH.saturating_mul(n)
}

/// Width and height of a PNG, JPEG, GIF or WebP image, from its header.
pub(crate) fn size_of(data: &[u8]) -> Option<(u32, u32)> {
    let be = |b: &[u8]| b.iter().fold(0u32, |n, &x| (n << 8) | u32::from(x));
    let le = |b: &[u8]| b.iter().rev().fold(0u32, |n, &x| (n << 8) | u32::from(x));
    if data.starts_with(b"\x89PNG\r\n\x1a\n") && data.len() >= 24 {
        return Some((be(&data[16..20]), be(&data[20..24])));
    }
    if data.starts_with(b"GIF8") && data.len() >= 10 {
        return Some((le(&data[6..8]), le(&data[8..10])));
    }
    if data.starts_with(b"RIFF") && data.get(8..12) == Some(b"WEBP") && data.len() >= 30 {
        return match &data[12..16] {
            b"VP8 " => Some((le(&data[26..28]) & 0x3FFF, le(&data[28..30]) & 0x3FFF)),
            b"VP8L" => {
                let bits = le(&data[21..25]);
                Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
            }
            b"VP8X" => Some((le(&data[24..27]) + 1, le(&data[27..30]) + 1)),
            _ => None,
        };
    }
    if data.starts_with(b"\xff\xd8") {
        let mut i = 2;
        while i + 9 <= data.len() && data[i] == 0xFF {
            let marker = data[i + 1];
            if matches!(marker, 0xC0..=0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF) {
                return Some((be(&data[i + 7..i + 9]), be(&data[i + 5..i + 7])));
            }
            i += 2 + be(&data[i + 2..i + 4]) as usize;
        }
    }
    None
}

/// The bytes of standard base64 text (padding and whitespace allowed);
/// none where it holds anything else.
fn decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for b in text.bytes() {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' | b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut d = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        d.extend(w.to_be_bytes());
        d.extend(h.to_be_bytes());
        d
    }

    fn b64(data: &[u8]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut s = String::new();
        for c in data.chunks(3) {
            let n = (u32::from(c[0]) << 16)
                | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                | u32::from(*c.get(2).unwrap_or(&0));
            for k in 0..4 {
                if k <= c.len() {
                    s.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
                } else {
                    s.push('=');
                }
            }
        }
        s
    }

    #[test]
    fn sizes_are_read_from_inline_bytes() {
        let url = format!("data:image/png;base64,{}", b64(&png(1024, 768)));
        assert_eq!(Image::url(&url, false).size, Some((1024, 768)));
        assert_eq!(Image::url("https://example.com/a.png", false).size, None);
        assert_eq!(Image::inline("not base64!", false).size, None);
        let gif = b"GIF89a\x40\x01\xf0\x00";
        assert_eq!(size_of(gif), Some((320, 240)));
    }

    #[test]
    fn the_published_rules() {
        let tiles = ImageRule::Tiles(ImageTiles {
            base: 85,
            tile: 170,
        });
        let at = |w, h| Image {
            size: Some((w, h)),
            low: false,
        };
        // OpenAI's examples: 1024×1024 → 768×768, 4 tiles: 765.
        assert_eq!(price(&tiles, at(1024, 1024)), Some(765));
        // 2048×4096 → 1024×2048 → 768×1536, 6 tiles: 1105.
        assert_eq!(price(&tiles, at(2048, 4096)), Some(1105));
        assert_eq!(
            price(
                &tiles,
                Image {
                    size: None,
                    low: true
                }
            ),
            Some(85)
        );
        assert_eq!(price(&tiles, Image::default()), Some(85 + 170 * 8));
        // Patches: 1024×1024 is 1,024 patches; 1800×2400 scales to 1,452.
        assert_eq!(price(&ImageRule::Patches(1.0), at(1024, 1024)), Some(1024));
        assert_eq!(price(&ImageRule::Patches(1.0), at(1800, 2400)), Some(1452));
        assert_eq!(price(&ImageRule::Patches(1.62), at(1024, 1024)), Some(1659));
        // Anthropic: 1092×1092 is about 1,590.
        assert_eq!(price(&ImageRule::Pixels, at(1092, 1092)), Some(1590));
        assert_eq!(price(&ImageRule::Pixels, at(4000, 4000)), Some(1600));
        assert_eq!(price(&ImageRule::GeminiTiles, at(300, 200)), Some(258));
        assert_eq!(
            price(&ImageRule::GeminiTiles, at(1000, 1000)),
            Some(258 * 4)
        );
        assert_eq!(price(&ImageRule::None, at(1, 1)), None);
    }
}
