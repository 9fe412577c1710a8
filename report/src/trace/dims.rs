//! An image's width and height from its header, as a `screencast-frame` event needs them: PNG
//! (IHDR), JPEG (the first start-of-frame marker) and WebP (VP8, VP8L, VP8X). `None` for
//! anything else or a header that does not hold together.

use crate::timeline::ImageType;

pub(crate) fn of(kind: ImageType, b: &[u8]) -> Option<(u32, u32)> {
    let d = match kind {
        ImageType::Png => png(b),
        ImageType::Jpeg => jpeg(b),
        ImageType::Webp => webp(b),
    }?;
    (d.0 > 0 && d.1 > 0).then_some(d)
}

fn be16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes(
        b.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le16(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes(
        b.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn png(b: &[u8]) -> Option<(u32, u32)> {
    if b.get(12..16)? != b"IHDR" {
        return None;
    }
    let w = u32::from_be_bytes(b.get(16..20)?.try_into().ok()?);
    let h = u32::from_be_bytes(b.get(20..24)?.try_into().ok()?);
    Some((w, h))
}

fn jpeg(b: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    while i + 4 <= b.len() {
        if b[i] != 0xFF {
            return None;
        }
        let marker = b[i + 1];
        // Fill bytes, and markers without a length.
        if marker == 0xFF {
            i += 1;
            continue;
        }
        if marker == 0x01 || (0xD0..=0xD7).contains(&marker) {
            i += 2;
            continue;
        }
        let len = be16(b, i + 2)? as usize;
        let start_of_frame =
            (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if start_of_frame {
            let h = be16(b, i + 5)?;
            let w = be16(b, i + 7)?;
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

fn webp(b: &[u8]) -> Option<(u32, u32)> {
    match b.get(12..16)? {
        b"VP8 " => {
            if b.get(23..26)? != [0x9D, 0x01, 0x2A] {
                return None;
            }
            Some((le16(b, 26)? & 0x3FFF, le16(b, 28)? & 0x3FFF))
        }
        b"VP8L" => {
            if *b.get(20)? != 0x2F {
                return None;
            }
            let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => {
            let w = u32::from_le_bytes([*b.get(24)?, *b.get(25)?, *b.get(26)?, 0]) + 1;
            let h = u32::from_le_bytes([*b.get(27)?, *b.get(28)?, *b.get(29)?, 0]) + 1;
            Some((w, h))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_and_jpeg_headers_give_their_size_and_garbage_gives_none() {
        let mut png_head = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png_head.extend_from_slice(&800u32.to_be_bytes());
        png_head.extend_from_slice(&600u32.to_be_bytes());
        assert_eq!(of(ImageType::Png, &png_head), Some((800, 600)));
        // SOI, an APP0 segment of 4 bytes, then SOF0 with height 480 and width 640.
        let jpeg_head = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x01,
            0xE0, 0x02, 0x80,
        ];
        assert_eq!(of(ImageType::Jpeg, &jpeg_head), Some((640, 480)));
        assert_eq!(of(ImageType::Jpeg, &[0xFF, 0xD8, 0xFF]), None);
        assert_eq!(of(ImageType::Png, b"\x89PNG\r\n\x1a\n"), None);
        assert_eq!(of(ImageType::Webp, b"RIFF\0\0\0\0WEBPVP8 "), None);
    }
}
