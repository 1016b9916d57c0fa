//! `wick quantize IN OUT TYPE`: every matrix to TYPE (falling back as llama.cpp does where a row is not a
//! multiple of 256; MXFP4 for the experts' matrices and Q8_0 for the rest, as llama.cpp's MXFP4_MOE),
//! norms kept as they are.

use crate::load::progress_bar;
use anyhow::{anyhow, Result};
use clap::Args;
use pollster::FutureExt as _;
use wick::gguf::{FileSource, GgmlType};

#[derive(Args)]
pub struct QuantizeArgs {
    /// The model to read
    input: String,
    /// The file to write
    output: String,
    /// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, MXFP4 (experts; the rest Q8_0), also F16, BF16, F32
    #[arg(name = "TYPE")]
    ty: String,
}

pub fn main(args: QuantizeArgs) -> Result<()> {
    let target =
        GgmlType::from_name(&args.ty).ok_or_else(|| anyhow!("unknown type {:?}", args.ty))?;
    let source = FileSource::open(&args.input).map_err(|e| anyhow!("cannot open {e}"))?;
    let bar = progress_bar("quantizing");
    let report = wick::quantize::quantize_model(
        &source,
        args.output.as_ref(),
        target,
        &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        },
    )
    .block_on();
    bar.finish_and_clear();
    let report = report?;
    for (ty, t) in &report.per_type {
        eprintln!(
            "  {ty}: {} tensors, {:.1} MB",
            t.tensors,
            t.bytes as f64 / 1e6
        );
    }
    eprintln!(
        "wick: wrote {} ({:.1} MB of tensors from {:.1} MB)",
        args.output,
        report.bytes_out as f64 / 1e6,
        report.bytes_in as f64 / 1e6
    );
    Ok(())
}
