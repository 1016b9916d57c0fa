//! Arbitrary text through two real tokenizers, built once: SmolLM2's byte-level BPE (from the header of
//! models/SmolLM2-135M-Instruct.Q4_1.gguf) and the SentencePiece one of tests/data/spm-tiny.gguf.
//!
//! Input: the first byte chooses the mode, the rest is the payload.
//! - even first byte: the payload as text (UTF-8, invalid bytes as U+FFFD), encoded with and without
//!   special-token parsing, and decoded back, whole and through the streaming decoder;
//! - odd first byte: the payload as little-endian u32 token ids (in range and not), decoded whole and
//!   streamed.
//!
//! Invariants checked (each holds by construction; `init` checks the vocabulary facts they rest on):
//! - every id `encode` gives is inside the vocabulary;
//! - streaming decode (all `push` results, then `finish`) equals `decode` of the same ids, for display
//!   and with special tokens;
//! - byte-level BPE round-trips: decode(encode(s), special = true) == s less the bytes the vocabulary
//!   has no token for (the encoder drops those, as llama.cpp does; SmolLM2 lacks 21 of the 256), with
//!   and without special-token parsing (special tokens decode to their own text; every merge's result is
//!   a token; no token holds a byte without a token of its own);
//! - SentencePiece without special-token parsing: decode(encode(s), true) == s with a space put before
//!   each piece of text that starts the input or follows the one user-defined token `<tool>` (which is
//!   cut out even without special-token parsing), and U+2581 read as a space (`add_space_prefix`
//!   defaults to true; every byte has a `<0xNN>` token, so nothing becomes `<unk>`).

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use wick::gguf::{read_header, FileSource, Header};
use wick::tokenizer::{StreamDecoder, TokenKind, Tokenizer};

struct Tokenizers {
    bpe: Tokenizer,
    /// Which bytes the BPE vocabulary has a token for (SmolLM2 lacks 21 of the 256: six control
    /// characters and bytes that start no UTF-8 sequence or only one of U+40000..U+BFFFF, U+100000..).
    bpe_has_byte: [bool; 256],
    spm: Tokenizer,
}

fn header(rel: &str) -> Header {
    let path = format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"));
    let src = FileSource::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
    read_header(&src).unwrap_or_else(|e| panic!("read the header of {path}: {e}"))
}

fn init() -> Tokenizers {
    let bpe_header = header("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let bpe = Tokenizer::from_gguf(&bpe_header).expect("the BPE tokenizer");
    let spm_header = header("tests/data/spm-tiny.gguf");
    let spm = Tokenizer::from_gguf(&spm_header).expect("the SentencePiece tokenizer");

    // BPE: every token decodes to bytes through the byte-level table or is a special token shown as its
    // text; each of the 256 bytes is a token; each merge forms a token.
    assert_eq!(bpe_header.get_str("tokenizer.ggml.model"), Some("gpt2"));
    for id in 0..bpe.vocab_size() as u32 {
        let kind = bpe.token_kind(id).unwrap();
        assert!(
            matches!(
                kind,
                TokenKind::Normal
                    | TokenKind::Control
                    | TokenKind::UserDefined
                    | TokenKind::Unknown
            ),
            "BPE token {id} is {kind:?}"
        );
    }
    // gpt2's byte table: printable Latin-1 bytes stand for themselves, the others for U+0100 upwards.
    let mut next = 0x100u32;
    let mut bpe_has_byte = [false; 256];
    let mut missing_chars = Vec::new();
    for b in 0..=255u32 {
        let printable = (0x21..=0x7e).contains(&b) || (0xa1..=0xac).contains(&b) || b >= 0xae;
        let c = if printable {
            b
        } else {
            next += 1;
            next - 1
        };
        let c = char::from_u32(c).unwrap();
        bpe_has_byte[b as usize] = bpe.token_id(&c.to_string()).is_some();
        if !bpe_has_byte[b as usize] {
            missing_chars.push(c);
        }
    }
    // A byte without a token appears in no token either (no merge involves it), so BPE leaves it as a
    // symbol of its own, which the encoder drops (as llama.cpp does).
    for id in 0..bpe.vocab_size() as u32 {
        let text = bpe.token_text(id).unwrap();
        assert!(
            !text.contains(missing_chars.as_slice()),
            "token {id} {text:?} holds a byte character that is not a token"
        );
    }
    let merges = bpe_header.get_array("tokenizer.ggml.merges").unwrap();
    for m in merges {
        let line = m.as_str().unwrap();
        let skip = line.chars().next().map_or(0, char::len_utf8);
        let pos = line[skip..].find(' ').unwrap() + skip;
        let joined = format!("{}{}", &line[..pos], &line[pos + 1..]);
        assert!(
            bpe.token_id(&joined).is_some(),
            "merge {line:?} forms no token"
        );
    }

    // SentencePiece: byte tokens for all bytes, one user-defined token, a space prefix.
    assert_eq!(spm_header.get_str("tokenizer.ggml.model"), Some("llama"));
    assert_eq!(spm_header.get_bool("tokenizer.ggml.add_space_prefix"), None);
    for b in 0..=255u8 {
        assert!(
            spm.token_id(&format!("<0x{b:02X}>")).is_some(),
            "no byte token {b:02X}"
        );
    }
    let user_defined: Vec<&str> = (0..spm.vocab_size() as u32)
        .filter(|&id| spm.token_kind(id) == Some(TokenKind::UserDefined))
        .map(|id| spm.token_text(id).unwrap())
        .collect();
    assert_eq!(user_defined, [SPM_USER_DEFINED]);
    Tokenizers {
        bpe,
        bpe_has_byte,
        spm,
    }
}

/// spm-tiny's one user-defined token, which is parsed from text even without special-token parsing.
const SPM_USER_DEFINED: &str = "<tool>";

fn tokenizers() -> &'static Tokenizers {
    static T: OnceLock<Tokenizers> = OnceLock::new();
    T.get_or_init(init)
}

/// Streaming decode equals whole decode, for display and with special tokens.
fn check_stream(t: &Tokenizer, ids: &[u32]) {
    for special in [false, true] {
        let whole = t.decode(ids, special);
        let mut d = if special {
            StreamDecoder::with_special()
        } else {
            StreamDecoder::new()
        };
        let mut streamed = String::new();
        for &id in ids {
            streamed.push_str(&d.push(t, id));
        }
        streamed.push_str(&d.finish());
        assert_eq!(streamed, whole, "ids {ids:?}, special {special}");
        // After finish the decoder is empty again.
        assert_eq!(d.finish(), "");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, payload)) = data.split_first() else {
        return;
    };
    let ts = tokenizers();
    if mode & 1 == 1 {
        let ids: Vec<u32> = payload
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        for t in [&ts.bpe, &ts.spm] {
            let n = t.vocab_size() as u32;
            // Mostly in range, now and then not.
            let ids: Vec<u32> = ids
                .iter()
                .map(|&x| {
                    if x & 0xff00_0000 == 0xff00_0000 {
                        x
                    } else {
                        x % n
                    }
                })
                .collect();
            check_stream(t, &ids);
        }
        return;
    }

    let text = String::from_utf8_lossy(payload);
    let text: &str = &text;

    for parse_special in [false, true] {
        let ids = ts.bpe.encode(text, parse_special);
        let n = ts.bpe.vocab_size() as u32;
        assert!(ids.iter().all(|&id| id < n));
        // The text comes back, less the bytes that have no token.
        let kept: Vec<u8> = text
            .bytes()
            .filter(|&b| ts.bpe_has_byte[b as usize])
            .collect();
        assert_eq!(
            ts.bpe.decode(&ids, true),
            String::from_utf8_lossy(&kept),
            "BPE round trip, parse_special {parse_special}, ids {ids:?}"
        );
        check_stream(&ts.bpe, &ids);
    }

    for parse_special in [false, true] {
        let ids = ts.spm.encode(text, parse_special);
        let n = ts.spm.vocab_size() as u32;
        assert!(ids.iter().all(|&id| id < n));
        if !parse_special {
            // The user-defined token is cut out; each piece of text between starts with a space.
            let expected = text
                .split(SPM_USER_DEFINED)
                .map(|p| {
                    if p.is_empty() {
                        String::new()
                    } else {
                        format!(" {p}").replace('\u{2581}', " ")
                    }
                })
                .collect::<Vec<_>>()
                .join(SPM_USER_DEFINED);
            assert_eq!(
                ts.spm.decode(&ids, true),
                expected,
                "SPM round trip, ids {ids:?}"
            );
        }
        check_stream(&ts.spm, &ids);
    }
});
