//! What the speculation tests share: a session that checks drafts, a draft model made from a file,
//! and the comparison of a speculating reply with the plain one.

use pollster::FutureExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use wick::engine::LoadOptions;
use wick::gguf::{FileSource, GgmlType};
use wick::gpu::Gpu;
use wick::sampler::TokenLogProb;
use wick::session::Session;

/// Tokens a check runs: the token picked last and up to 4 drafted.
pub const CHECK: u32 = 5;

/// `file` loaded for 256 positions, its plans checking up to `check_tokens` tokens a step (0: none).
pub fn session(gpu: &Arc<Gpu>, file: &Path, check_tokens: u32) -> Session {
    let source = FileSource::open(file).unwrap();
    let options = LoadOptions {
        n_ctx: 256,
        batch: Some(16),
        check_tokens,
        ..Default::default()
    };
    Session::load(gpu.clone(), &source, &options, &mut |_, _| {})
        .block_on()
        .unwrap()
}

/// The speculating reply equals the plain one token for token, with the same log-probabilities,
/// up to the first near tie in the plain one (where the two runs' sums in other orders may pick
/// either token; llama.cpp's own backends part there too).
pub fn assert_same_reply(
    name: &str,
    plain: &(Vec<u32>, Vec<TokenLogProb>),
    spec: &(Vec<u32>, Vec<TokenLogProb>),
) {
    for (i, (a, b)) in plain.1.iter().zip(&spec.1).enumerate() {
        let gap = a.top[0].1 - a.top.get(1).map_or(f32::NEG_INFINITY, |t| t.1);
        if a.token != b.token {
            assert!(
                gap < 1e-3,
                "{name}: token {i} is {} with a draft, {} without (gap {gap})",
                b.token,
                a.token
            );
            return;
        }
        assert!(
            (a.log_prob - b.log_prob).abs() < 2e-3,
            "{name}: token {i}'s log-probability {} against {}",
            b.log_prob,
            a.log_prob
        );
    }
    assert_eq!(plain.0.len(), spec.0.len(), "{name}: reply lengths");
}

/// `file` requantized to Q4_0 in a temporary file of its own: a draft close to the model but not
/// the same. Each call writes its own file, so that tests running at once never write, read or
/// remove each other's.
pub fn requantized(file: &Path) -> PathBuf {
    static MADE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = file.file_stem().unwrap().to_string_lossy();
    let pid = std::process::id();
    let out = std::env::temp_dir().join(format!("wick-draft-{pid}-{n}-{name}.gguf"));
    let source = FileSource::open(file).unwrap();
    wick::quantize::quantize_model(&source, &out, GgmlType::Q4_0, &mut |_, _| {})
        .block_on()
        .unwrap();
    out
}
