//! Images for the examples: planar `f32` channels in `[0, 1]`, read from
//! and written to PNG files, or generated as a test pattern with sharp
//! edges (so blurring and resampling are visible).

use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

/// A `width × height` image as planar channels (1 for grayscale, 3 for
/// RGB), each `width · height` values in `[0, 1]`, rows contiguous.
#[derive(Clone, Debug, PartialEq)]
pub struct Picture {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// One plane per channel.
    pub channels: Vec<Vec<f32>>,
}

/// Why a picture could not be read or written.
#[derive(Debug)]
#[non_exhaustive]
pub enum PictureError {
    /// Opening or creating the file failed.
    Io(std::io::Error),
    /// The PNG could not be decoded.
    Decode(png::DecodingError),
    /// The PNG could not be encoded.
    Encode(png::EncodingError),
    /// A PNG this module does not read, or a picture it cannot write.
    Unsupported(String),
}

impl fmt::Display for PictureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PictureError::Io(e) => write!(f, "{e}"),
            PictureError::Decode(e) => write!(f, "PNG decoding: {e}"),
            PictureError::Encode(e) => write!(f, "PNG encoding: {e}"),
            PictureError::Unsupported(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PictureError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PictureError::Io(e) => Some(e),
            PictureError::Decode(e) => Some(e),
            PictureError::Encode(e) => Some(e),
            PictureError::Unsupported(_) => None,
        }
    }
}

impl From<std::io::Error> for PictureError {
    fn from(e: std::io::Error) -> Self {
        PictureError::Io(e)
    }
}

impl From<png::DecodingError> for PictureError {
    fn from(e: png::DecodingError) -> Self {
        PictureError::Decode(e)
    }
}

impl From<png::EncodingError> for PictureError {
    fn from(e: png::EncodingError) -> Self {
        PictureError::Encode(e)
    }
}

/// An RGB test pattern: stripes, a checkerboard and rings.
pub fn generated(w: usize, h: usize) -> Picture {
    let mut channels = vec![vec![0f32; w * h]; 3];
    for y in 0..h {
        for x in 0..w {
            let (fx, fy) = (x as f32, y as f32);
            let checker = ((x / 32 + y / 32) % 2) as f32;
            let (dx, dy) = (fx - w as f32 / 2.0, fy - h as f32 / 2.0);
            let ring = if ((dx * dx + dy * dy).sqrt() as usize / 24).is_multiple_of(2) { 1.0 } else { 0.0 };
            let stripes = if (x + y) % 16 < 3 { 1.0 } else { 0.0 };
            channels[0][y * w + x] = checker;
            channels[1][y * w + x] = ring;
            channels[2][y * w + x] = 0.5 * stripes + 0.5 * (0.5 + 0.5 * (fx / 40.0).sin() * (fy / 30.0).cos());
        }
    }
    Picture { width: w, height: h, channels }
}

/// Reads a PNG: grayscale (one channel) or RGB (three); alpha is dropped,
/// 16-bit samples are cut to 8 bits, palettes expanded.
pub fn read_png(path: &Path) -> Result<Picture, PictureError> {
    let mut decoder = png::Decoder::new(File::open(path)?);
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info()?;
    let mut buf = vec![0u8; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf)?;
    let (w, h) = (info.width as usize, info.height as usize);
    let stride = match info.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Err(PictureError::Unsupported("indexed PNG was not expanded".into())),
    };
    let n = if stride <= 2 { 1 } else { 3 };
    let line = info.line_size;
    let mut channels = vec![vec![0f32; w * h]; n];
    for y in 0..h {
        for x in 0..w {
            for (c, ch) in channels.iter_mut().enumerate() {
                ch[y * w + x] = buf[y * line + x * stride + c] as f32 / 255.0;
            }
        }
    }
    Ok(Picture { width: w, height: h, channels })
}

impl Picture {
    /// The pixels as interleaved 8-bit samples (`channels` per pixel),
    /// each value in `[0, 1]` scaled to `0..=255` and rounded.
    pub fn to_interleaved_u8(&self) -> Vec<u8> {
        let n = self.channels.len();
        let mut data = vec![0u8; self.width * self.height * n];
        for (c, ch) in self.channels.iter().enumerate() {
            for (i, v) in ch.iter().enumerate() {
                data[i * n + c] = (v.clamp(0.0, 1.0) * 255.0).round() as u8;
            }
        }
        data
    }

    /// A picture from interleaved 8-bit samples (`channels` per pixel).
    pub fn from_interleaved_u8(width: usize, height: usize, channels: usize, data: &[u8]) -> Picture {
        let planes = (0..channels)
            .map(|c| (0..width * height).map(|i| data[i * channels + c] as f32 / 255.0).collect())
            .collect();
        Picture { width, height, channels: planes }
    }
}

/// Writes `p` as an 8-bit grayscale (one channel) or RGB (three) PNG,
/// values clamped to `[0, 1]`.
pub fn write_png(path: &Path, p: &Picture) -> Result<(), PictureError> {
    let n = p.channels.len();
    if n != 1 && n != 3 {
        return Err(PictureError::Unsupported(format!("{n} channels: PNGs are written with 1 or 3")));
    }
    let (w, h) = (u32::try_from(p.width), u32::try_from(p.height));
    let (Ok(w), Ok(h)) = (w, h) else {
        return Err(PictureError::Unsupported(format!("{} x {} is too large for a PNG", p.width, p.height)));
    };
    let mut enc = png::Encoder::new(BufWriter::new(File::create(path)?), w, h);
    enc.set_color(if n == 1 { png::ColorType::Grayscale } else { png::ColorType::Rgb });
    enc.set_depth(png::BitDepth::Eight);
    let mut data = vec![0u8; p.width * p.height * n];
    for i in 0..p.width * p.height {
        for (c, ch) in p.channels.iter().enumerate() {
            data[i * n + c] = (ch[i].clamp(0.0, 1.0) * 255.0).round() as u8;
        }
    }
    enc.write_header()?.write_image_data(&data)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.png");
        let p = generated(67, 33);
        write_png(&path, &p).unwrap();
        let q = read_png(&path).unwrap();
        assert_eq!((q.width, q.height, q.channels.len()), (67, 33, 3));
        for (a, b) in p.channels.iter().flatten().zip(q.channels.iter().flatten()) {
            assert!((a - b).abs() <= 0.5 / 255.0 + 1e-6, "{a} vs {b}");
        }
        let gray = Picture { width: 2, height: 1, channels: vec![vec![0.0, 1.0]] };
        write_png(&path, &gray).unwrap();
        assert_eq!(read_png(&path).unwrap(), gray);
        let two = Picture { width: 1, height: 1, channels: vec![vec![0.0], vec![0.0]] };
        assert!(matches!(write_png(&path, &two), Err(PictureError::Unsupported(_))));
        assert!(matches!(read_png(&dir.path().join("missing.png")), Err(PictureError::Io(_))));
    }
}
