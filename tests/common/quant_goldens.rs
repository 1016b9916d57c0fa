//! The quant goldens (tests/goldens/quant/, made by tests/goldens/make_quant_goldens.py): what the `gguf`
//! package and llama.cpp make of seeded weights and of random block bytes.

use std::path::Path;
use wick::gguf::GgmlType;

/// One golden file: weights (when the bytes were quantized from them), the quantized bytes, and gguf's
/// dequantization of those bytes.
pub struct Golden {
    pub name: String,
    pub ty: GgmlType,
    pub input: Option<Vec<f32>>,
    pub bytes: Vec<u8>,
    pub dequantized: Vec<f32>,
}

pub fn goldens() -> Vec<Golden> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/goldens/quant");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/goldens/quant")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| parse_golden(&name, &std::fs::read(dir.join(&name)).unwrap()))
        .collect()
}

/// Layout: u32 n, u32 has_input, [f32; n] input if has_input, the quantized bytes, [f32; n] dequantized.
fn parse_golden(name: &str, b: &[u8]) -> Golden {
    let ty =
        GgmlType::from_name(name.split('.').next().unwrap()).expect("file named after its type");
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let f32s = |at: usize, n: usize| -> Vec<f32> {
        b[at..at + 4 * n]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let (n, has_input) = (u32_at(0), u32_at(4) != 0);
    let mut at = 8;
    let input = has_input.then(|| {
        at += 4 * n;
        f32s(8, n)
    });
    let len = ty.bytes_for(n as u64).unwrap() as usize;
    let bytes = b[at..at + len].to_vec();
    let dequantized = f32s(at + len, n);
    assert_eq!(at + len + 4 * n, b.len(), "{name}: length");
    Golden {
        name: name.to_string(),
        ty,
        input,
        bytes,
        dequantized,
    }
}
