//! Prints the token ids of a text with a model's tokenizer (special tokens parsed, BOS as the model
//! wants): `cargo run --release --example tokenize -- MODEL TEXT`.
use pollster::FutureExt as _;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let src = wick::gguf::FileSource::open(&args[1]).expect("open the model");
    let h = wick::gguf::read_header(&src)
        .block_on()
        .expect("read the header");
    let t = wick::tokenizer::Tokenizer::from_gguf(&h).expect("a tokenizer");
    let mut ids: Vec<u32> = t.add_bos().then(|| t.bos()).flatten().into_iter().collect();
    ids.extend(t.encode(&args[2], true));
    println!(
        "{}",
        ids.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
}
