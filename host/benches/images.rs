//! Benchmark: preparing a 12-megapixel phone photo for the model.
//!
//! Makes a 4032×3024 JPEG with a photo's texture (gradients, edges and
//! sensor-like noise, so the entropy decoder has real work), then times
//! `media::prepare` on it: check the JPEG's structure, decode, downscale
//! to the provider's limits, and encode the copy without metadata. Prints
//! medians for Anthropic's limits (about 1.15 megapixels) and OpenAI's
//! (768 pixels on the shorter side), and a `figure:` line for
//! `scripts/bench-all`.
//!
//! Run with `cargo bench -p hearth --bench images`.

use std::time::{Duration, Instant};

use hearth::config::ProviderKind;
use hearth::media::{Limits, prepare};
use image::{Rgb, RgbImage};

const WIDTH: u32 = 4032;
const HEIGHT: u32 = 3024;
const ROUNDS: usize = 15;

fn main() {
    let photo = photo_jpeg();
    println!(
        "a {WIDTH}x{HEIGHT} JPEG of {:.1} MB",
        photo.len() as f64 / 1e6
    );
    let mut figure = 0.0;
    for (provider, name) in [
        (ProviderKind::Anthropic, "anthropic"),
        (ProviderKind::OpenAi, "openai"),
    ] {
        let limits = Limits::for_provider(provider, None);
        let prepared = prepare(&photo, &limits).expect("the photo prepares");
        let mut samples: Vec<Duration> = (0..ROUNDS)
            .map(|_| {
                let started = Instant::now();
                std::hint::black_box(prepare(std::hint::black_box(&photo), &limits).ok());
                started.elapsed()
            })
            .collect();
        samples.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let median = ms(samples[ROUNDS / 2]);
        println!(
            "prepare for {name} ({}x{}, {} KB): {ROUNDS} samples, median {median:.1} ms, min {:.1} ms, max {:.1} ms",
            prepared.width,
            prepared.height,
            prepared.bytes.len() / 1000,
            ms(samples[0]),
            ms(samples[ROUNDS - 1]),
        );
        if provider == ProviderKind::Anthropic {
            figure = median;
        }
    }
    println!("figure: 12 MP JPEG prepared for the model, median: {figure:.1} ms (target <= 150)");
}

/// A 12-megapixel JPEG at quality 90 that compresses like a photo.
fn photo_jpeg() -> Vec<u8> {
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut noise = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 24) as i32 - 12
    };
    let image = RgbImage::from_fn(WIDTH, HEIGHT, |x, y| {
        let (fx, fy) = (x as f32 / WIDTH as f32, y as f32 / HEIGHT as f32);
        let sky = ((1.0 - fy) * 180.0) as i32;
        let hill = if fy > 0.55 + 0.1 * (fx * 9.0).sin() {
            70
        } else {
            0
        };
        let stripes = if (x / 61 + y / 47) % 5 == 0 { 35 } else { 0 };
        let n = noise();
        let c = |v: i32| (v + n).clamp(0, 255) as u8;
        Rgb([
            c(60 + sky / 3 + stripes),
            c(90 + hill + sky / 4),
            c(sky + 40 - hill / 2),
        ])
    });
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, 90)
        .encode(
            image.as_raw(),
            WIDTH as u16,
            HEIGHT as u16,
            jpeg_encoder::ColorType::Rgb,
        )
        .expect("encode the photo");
    out
}
