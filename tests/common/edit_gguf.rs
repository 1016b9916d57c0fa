//! A GGUF file rewritten in memory with its metadata or tensors changed: the bad files that tests of
//! refusals load.

use pollster::FutureExt as _;
use std::path::Path;
use wick::gguf::write::{TensorSpec, Writer};
use wick::gguf::{read_header, FileSource, MemorySource, Value};

/// `file` rewritten with `edit` applied to its metadata and tensors (each with its bytes).
pub fn variant(
    file: &Path,
    edit: impl FnOnce(&mut Vec<(String, Value)>, &mut Vec<(TensorSpec, Vec<u8>)>),
) -> MemorySource {
    let bytes = std::fs::read(file).unwrap();
    let header = read_header(&FileSource::open(file).unwrap())
        .block_on()
        .unwrap();
    let mut metadata = header.metadata.clone();
    let mut tensors: Vec<(TensorSpec, Vec<u8>)> = header
        .tensors
        .iter()
        .map(|t| {
            let r = header.tensor_range(t);
            let spec = TensorSpec {
                name: t.name.clone(),
                dims: t.dims.clone(),
                ty: t.ty,
            };
            (spec, bytes[r.start as usize..r.end as usize].to_vec())
        })
        .collect();
    edit(&mut metadata, &mut tensors);
    let specs: Vec<TensorSpec> = tensors.iter().map(|(s, _)| s.clone()).collect();
    let mut w = Writer::new(Vec::new(), &metadata, &specs).unwrap();
    for (_, data) in &tensors {
        w.write_data(data).unwrap();
    }
    MemorySource {
        bytes: w.finish().unwrap(),
        name: "variant.gguf".into(),
    }
}

/// Sets (or adds) one metadata key.
pub fn set(metadata: &mut Vec<(String, Value)>, key: &str, value: Value) {
    metadata.retain(|(k, _)| k != key);
    metadata.push((key.into(), value));
}
