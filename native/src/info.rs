//! `wick info`: what a GGUF file holds. Reads only the header.

use crate::load::open_source;
use anyhow::Result;
use clap::Args;
use pollster::FutureExt as _;
use std::collections::BTreeMap;
use wick::gguf::{read_header, Value};

#[derive(Args)]
pub struct InfoArgs {
    /// Path of a GGUF model [default: models/SmolLM2-135M-Instruct.Q4_1.gguf]
    #[arg(short = 'm', long = "model")]
    model: Option<String>,
    /// List every tensor
    #[arg(long)]
    tensors: bool,
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) if s.len() > 80 => format!(
            "{:?}... ({} bytes)",
            &s[..s.floor_char_boundary(80)],
            s.len()
        ),
        Value::String(s) => format!("{s:?}"),
        Value::Array(a) if a.len() > 8 => {
            let head: Vec<String> = a[..4].iter().map(show).collect();
            format!("[{}, ...] ({} items)", head.join(", "), a.len())
        }
        Value::Array(a) => format!("[{}]", a.iter().map(show).collect::<Vec<_>>().join(", ")),
        Value::F32(x) => format!("{x}"),
        Value::F64(x) => format!("{x}"),
        Value::Bool(b) => format!("{b}"),
        other => format!("{}", other.as_i64().unwrap_or_default()),
    }
}

pub fn main(args: InfoArgs) -> Result<()> {
    let source = open_source(&args.model)?;
    let h = read_header(source.as_ref()).block_on()?;
    println!(
        "file: {} ({} bytes, GGUF v{})",
        source.describe(),
        h.file_len,
        h.version
    );
    println!("architecture: {}", h.architecture().unwrap_or("(none)"));
    match wick::models::describe(&h) {
        Ok(lines) => lines.iter().for_each(|l| println!("  {l}")),
        Err(e) => println!("  not runnable: {e}"),
    }
    match wick::embeddings::Pooling::of_model(&h) {
        Ok(Some(p)) => println!(
            "  an embedding model: pools by {} (wick embed, /v1/embeddings)",
            p.name()
        ),
        Ok(None) => {}
        Err(e) => println!("  not runnable: {e}"),
    }
    println!(
        "chat template: {}",
        match wick::chat_template::of_model(&h) {
            Some((_, wick::chat_template::Origin::File)) => "the file's own".to_string(),
            Some((_, wick::chat_template::Origin::Family(f))) =>
                format!("none in the file; {f}'s standard format (as llama.cpp builds it in)"),
            None => "none (chat needs one; run takes raw prompts)".to_string(),
        }
    );
    println!("metadata:");
    for (k, v) in &h.metadata {
        println!("  {k} = {}", show(v));
    }
    let mut by_type: BTreeMap<String, (usize, u64)> = BTreeMap::new();
    for t in &h.tensors {
        let e = by_type.entry(t.ty.name().to_string()).or_default();
        e.0 += 1;
        e.1 += t.bytes();
    }
    let total: u64 = h.tensors.iter().map(|t| t.bytes()).sum();
    let params: u64 = h.tensors.iter().map(|t| t.elements()).sum();
    println!(
        "tensors: {} ({} parameters, {:.1} MB)",
        h.tensors.len(),
        params,
        total as f64 / 1e6
    );
    for (ty, (n, bytes)) in by_type {
        println!("  {ty}: {n} tensors, {:.1} MB", bytes as f64 / 1e6);
    }
    if args.tensors {
        for t in &h.tensors {
            println!("  {} {} {:?} {} bytes", t.name, t.ty, t.dims, t.bytes());
        }
    }
    Ok(())
}
