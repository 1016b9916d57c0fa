//! Arbitrary bytes as a whole GGUF file: the header parser must return Ok or Err, never panic, hang or
//! allocate without bound; and what a loader does with a header it accepted (tensor sizes and ranges,
//! reading and dequantizing tensor data, metadata getters, building a tokenizer, writing the file back)
//! must not fail either.

#![no_main]

use libfuzzer_sys::fuzz_target;
use wick::gguf::write::{TensorSpec, Writer};
use wick::gguf::{read_header, ByteSource, GgufError, Header, MemorySource, Value};
use wick::tokenizer::{StreamDecoder, Tokenizer};

fuzz_target!(|data: &[u8]| {
    let file_len = data.len() as u64;
    let source = MemorySource {
        bytes: data.to_vec(),
        name: "fuzz input".into(),
    };

    // The whole file at once, and through read_header (which reads a prefix of min(4 MiB, file)).
    let direct = Header::parse(data, file_len);
    assert!(
        !matches!(direct, Err(GgufError::NeedMore { .. })),
        "the whole file cannot need more: {direct:?}"
    );
    let via_source = read_header(&source);
    assert_eq!(format!("{via_source:?}"), format!("{direct:?}"));

    // Growing prefixes, as read_header grows them for a large file: every answer on a prefix is either
    // "read more" (asking for more than it has) or the answer the whole file gives.
    let mut want = 1u64.min(file_len);
    let mut rounds = 0;
    loop {
        rounds += 1;
        assert!(rounds <= 80, "prefix growth does not converge");
        match Header::parse(&data[..want as usize], file_len) {
            Err(GgufError::NeedMore { needed, have }) => {
                assert_eq!(have, want);
                assert!(
                    needed > have && needed <= file_len,
                    "needed {needed}, have {have}, file {file_len}"
                );
                want = needed.max(want * 2).min(file_len);
            }
            other => {
                assert_eq!(format!("{other:?}"), format!("{direct:?}"));
                break;
            }
        }
    }

    if debug() {
        match &direct {
            Ok(h) => eprintln!(
                "parsed: v{} {} keys {} tensors, data at {}",
                h.version,
                h.metadata.len(),
                h.tensors.len(),
                h.data_offset
            ),
            Err(e) => eprintln!("refused: {e}"),
        }
    }
    let Ok(h) = direct else { return };
    check_header(&h, &source, file_len);
    check_metadata(&h);
    check_tokenizer(&h);
    check_rewrite(&h, &source, file_len);
});

/// WICK_FUZZ_DEBUG=1 prints what each input parsed to (for checking seeds).
fn debug() -> bool {
    static D: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *D.get_or_init(|| std::env::var_os("WICK_FUZZ_DEBUG").is_some())
}

/// What a loader relies on: tensor sizes, shapes and byte ranges inside the file; reading and
/// dequantizing the data.
fn check_header(h: &Header, source: &MemorySource, file_len: u64) {
    assert!(h.alignment.is_power_of_two());
    assert_eq!(h.data_offset % h.alignment, 0);
    assert!(h.version == 2 || h.version == 3);
    assert_eq!(h.file_len, file_len);
    let mut total = 0u64;
    for t in &h.tensors {
        assert!(!t.dims.is_empty() && t.dims.len() <= 4);
        let elements = t.elements();
        assert!(elements > 0);
        assert_eq!(t.row_len().checked_mul(t.rows()), Some(elements));
        assert_eq!(t.row_len() % t.ty.block_len() as u64, 0);
        let bytes = t.bytes();
        assert!(bytes > 0);
        assert_eq!(t.ty.bytes_for(elements), Some(bytes));
        // Bytes of one row, as the GPU upload lays rows out.
        let row_bytes = t.ty.bytes_for(t.row_len()).expect("whole blocks per row");
        assert_eq!(row_bytes.checked_mul(t.rows()), Some(bytes));
        assert_eq!(t.offset % h.alignment, 0);
        let range = h.tensor_range(t);
        assert!(range.start <= range.end && range.end <= file_len);
        assert_eq!(range.end - range.start, bytes);
        // Tensor names are unique, so lookup by name finds this one.
        assert_eq!(h.tensor(&t.name), Some(t));
        total = total
            .checked_add(bytes)
            .expect("total tensor bytes overflow");

        let mut buf = vec![0u8; bytes as usize];
        source
            .read_at(range.start, &mut buf)
            .expect("a tensor's range is inside the file");
        assert_eq!(buf, &source.bytes[range.start as usize..range.end as usize]);
        // Dequantize (bounded: the data is at most the input, and at most 256 weights per 2 bytes).
        let mut out = vec![0f32; elements as usize];
        wick::quant::dequantize(t.ty, &buf, &mut out).expect("dequantize a parsed tensor");
    }
    // A loader sums all tensors' bytes for its progress bar.
    let _ = total;
}

/// Every getter on every value, as model code and the CLI's `info` call them.
fn check_metadata(h: &Header) {
    for (k, v) in &h.metadata {
        // Keys are unique, so the lookup finds this value.
        assert!(std::ptr::eq(h.get(k).unwrap(), v));
        let _ = (
            h.get_str(k),
            h.get_u64(k),
            h.get_f64(k),
            h.get_bool(k),
            h.get_array(k),
        );
        check_value(v, 0);
    }
    let _ = h.architecture();
    if let Some(arch) = h.architecture() {
        for key in [
            "context_length",
            "embedding_length",
            "block_count",
            "feed_forward_length",
            "attention.head_count",
            "attention.head_count_kv",
            "attention.key_length",
            "attention.layer_norm_rms_epsilon",
            "rope.dimension_count",
            "rope.freq_base",
            "rope.scaling.type",
            "rope.scaling.factor",
        ] {
            let key = format!("{arch}.{key}");
            let _ = h.get(&key).and_then(Value::as_u64).map(u32::try_from);
            let _ = h.get_f64(&key).map(|v| v as f32);
            let _ = h.get_str(&key);
        }
    }
}

fn check_value(v: &Value, depth: u32) {
    assert!(depth <= 4, "arrays nest deeper than the parser allows");
    let _ = v.type_id();
    let _ = (v.as_str(), v.as_bool(), v.as_f64());
    // as_i64 and as_u64 agree where both are defined.
    if let (Some(u), Some(i)) = (v.as_u64(), v.as_i64()) {
        assert_eq!(u as i128, i as i128);
    }
    if let Some(u) = v.as_u64() {
        if let Ok(i) = i64::try_from(u) {
            assert_eq!(v.as_i64(), Some(i));
        }
    }
    if let Some(items) = v.as_array() {
        if let Some(first) = items.first() {
            // GGUF arrays hold one type.
            assert!(items.iter().all(|x| x.type_id() == first.type_id()));
        }
        for x in items {
            check_value(x, depth + 1);
        }
    }
}

/// A header with tokenizer metadata builds a tokenizer, or says why not; a tokenizer it builds encodes
/// and decodes.
fn check_tokenizer(h: &Header) {
    if h.get("tokenizer.ggml.model").is_none() {
        return;
    }
    let t = Tokenizer::from_gguf(h);
    if debug() {
        match &t {
            Ok(t) => eprintln!("tokenizer: {} tokens", t.vocab_size()),
            Err(e) => eprintln!("no tokenizer: {e}"),
        }
    }
    let Ok(t) = t else { return };
    let n = t.vocab_size() as u32;
    assert!(n > 0);
    for id in [t.bos(), t.eos(), t.eot(), t.eom()].into_iter().flatten() {
        assert!(id < n);
    }
    assert!(t.end_of_generation_ids().windows(2).all(|w| w[0] < w[1]));
    assert!(t.end_of_generation_ids().iter().all(|&id| id < n));
    for text in [
        "",
        "Hello world! 123 <s></s> <|im_start|>user\n\u{e9}\u{1F600}\n\t  x",
        "\u{2581}a b",
    ] {
        for special in [false, true] {
            let ids = t.encode(text, special);
            assert!(ids.iter().all(|&id| id < n), "id out of range");
            for decode_special in [false, true] {
                let whole = t.decode(&ids, decode_special);
                let mut d = if decode_special {
                    StreamDecoder::with_special()
                } else {
                    StreamDecoder::new()
                };
                let mut streamed: String = ids.iter().map(|&id| d.push(&t, id)).collect();
                streamed.push_str(&d.finish());
                assert_eq!(streamed, whole);
            }
        }
    }
    for id in 0..n.min(300) {
        let _ = (t.token_piece(id), t.token_text(id), t.token_kind(id));
    }
    let _ = (
        t.token_piece(n),
        t.token_text(n),
        t.token_kind(n),
        t.chat_template(),
    );
}

/// The crate's writer takes any header the parser accepted (as the quantizer hands it one), and the
/// reader reads back the same metadata, tensor table and data.
fn check_rewrite(h: &Header, source: &MemorySource, file_len: u64) {
    // A header of no tensors may carry an alignment far beyond the file (the data section then starts
    // past its end); writing it would pad to that alignment. Only rewrite what stays small.
    if h.alignment > file_len.max(32) {
        return;
    }
    let specs: Vec<TensorSpec> = h
        .tensors
        .iter()
        .map(|t| TensorSpec {
            name: t.name.clone(),
            dims: t.dims.clone(),
            ty: t.ty,
        })
        .collect();
    let mut w = Writer::new(Vec::new(), &h.metadata, &specs).expect("write a parsed header back");
    for t in &h.tensors {
        let r = h.tensor_range(t);
        w.write_data(&source.bytes[r.start as usize..r.end as usize])
            .expect("write tensor data");
    }
    let out = w.finish().expect("every tensor written");
    let h2 = Header::parse(&out, out.len() as u64).expect("read back what the writer wrote");
    assert_eq!(h2.alignment, h.alignment);
    assert_eq!(h2.metadata.len(), h.metadata.len());
    for ((k1, v1), (k2, v2)) in h.metadata.iter().zip(&h2.metadata) {
        assert_eq!(k1, k2);
        assert!(same_value(v1, v2), "{k1}: {v1:?} vs {v2:?}");
    }
    assert_eq!(h2.tensors.len(), h.tensors.len());
    for (t1, t2) in h.tensors.iter().zip(&h2.tensors) {
        assert_eq!((&t1.name, &t1.dims, t1.ty), (&t2.name, &t2.dims, t2.ty));
        let (r1, r2) = (h.tensor_range(t1), h2.tensor_range(t2));
        assert_eq!(
            &source.bytes[r1.start as usize..r1.end as usize],
            &out[r2.start as usize..r2.end as usize]
        );
    }
}

/// Equality with floats compared by their bits (NaN payloads included).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::F32(x), Value::F32(y)) => x.to_bits() == y.to_bits(),
        (Value::F64(x), Value::F64(y)) => x.to_bits() == y.to_bits(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q))
        }
        _ => a == b,
    }
}
